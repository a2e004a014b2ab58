"""The recorder that stands in for every launcher (torchrun, python, srun, ...) under the bash oracle.

Installed by harness.py as an executable named after the launcher (with an absolute shebang, so a
recorder named `python` never finds itself). Appends one JSON line to $__PL_RECORD and exits 0
without running anything.
"""

import json
import os
import sys


def original_environ() -> dict:
    """The environment this process was started with. Python may add to os.environ at startup
    (PEP 538 sets LC_CTYPE under the C locale), so read the exec-time block where the OS keeps it."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return dict(os.environ)
    env = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            k, v = item.split(b"=", 1)
            env[os.fsdecode(k)] = os.fsdecode(v)
    return env


# Options of the command-handing launchers that take a value (everything else is a flag).
SSH_VALUES = {"-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-W", "-b", "-c", "-E", "-e", "-I", "-m",
              "-O", "-Q", "-S", "-w", "-B"}
PDSH_VALUES = {"-w", "-x", "-R", "-l", "-t", "-u", "-f", "-g", "-X", "-e", "-F", "-o", "-N"}
SBATCH_SHORT_VALUES = set("NncpJtoewxAGCDdiLmqSabFM")


def fresh_env(env: dict) -> dict:
    """A remote machine's environment as far as the oracle can tell: only what bash and the harness
    need (PATH, BASH_ENV, the oracle's own __PL_ variables)."""
    return {k: v for k, v in env.items() if k in ("PATH", "BASH_ENV") or k.startswith("__PL_")}


def submit(name: str, args: list, env: dict) -> int:
    """Run what sbatch / ssh / pdsh / `ray job submit` would run, the way they would run it."""
    if name == "sbatch":
        i, wrap, export = 0, None, None
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            if a.startswith("--"):
                key, eq, val = a.partition("=")
                if not eq and key in ("--wrap", "--export", "--nodes", "--ntasks", "--job-name", "--output",
                                      "--partition", "--time", "--gres", "--account"):
                    val, i = args[i + 1], i + 1
                if key == "--wrap":
                    wrap = val
                elif key == "--export":
                    export = val
            elif len(a) == 2 and a[1] in SBATCH_SHORT_VALUES:
                i += 1
            i += 1
        if export is not None:
            items = export.split(",")
            if "ALL" not in items:
                env = fresh_env(env)
            for item in items:
                if "=" in item:
                    k, v = item.split("=", 1)
                    env[k] = v
        if wrap is not None:
            argv = ["bash", "-c", wrap]
        elif i < len(args):
            argv = ["bash"] + args[i:]
        else:
            argv = ["bash", "-s"]  # the job script on stdin
        os.execvpe("bash", argv, env)
    if name in ("ssh", "pdsh"):
        values = SSH_VALUES if name == "ssh" else PDSH_VALUES
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in values else 1
        if name == "ssh":
            i += 1  # the host
        if i >= len(args):
            return 0
        os.execvpe("bash", ["bash", "-c", " ".join(args[i:])], fresh_env(env))
    if name == "ray":
        if "--" in args:
            cmd = args[args.index("--") + 1:]
            if cmd:
                os.execvpe(cmd[0], cmd, fresh_env(env))
        return 0
    if name == "gantry":
        # `gantry run [opts] -- CMD`: CMD runs on Beaker with the `--env` / `--env-secret` options only
        if args[:1] == ["run"] and "--" in args:
            k = args.index("--")
            remote = fresh_env(env)
            for opt, val in zip(args[1:k], args[2:k]):
                if opt == "--env" and "=" in val:
                    remote[val.split("=", 1)[0]] = val.split("=", 1)[1]
                elif opt == "--env-secret" and "=" in val:  # NAME=SECRET: the secret's value, from Beaker
                    remote[val.split("=", 1)[0]] = "secret-" + val.split("=", 1)[1]
            cmd = args[k + 1:]
            if cmd:
                os.execvpe(cmd[0], cmd, remote)
        return 0
    return 0


def main() -> int:
    name = os.path.basename(sys.argv[0])
    if name in ("sbatch", "ssh", "pdsh", "ray", "gantry"):
        return submit(name, sys.argv[1:], original_environ())
    rec = {
        "name": name,
        "argv": [name] + sys.argv[1:],
        "env": original_environ(),
        "line": int(os.environ.get("__PL_LINE") or 0),
        "file": os.environ.get("__PL_FILE", ""),
        "parent_line": int(os.environ.get("__PL_PARENT_LINE") or 0),
        "parent_file": os.environ.get("__PL_PARENT_FILE", ""),
        "cwd": os.getcwd(),
    }
    data = (json.dumps(rec) + "\n").encode("utf-8", "surrogateescape")
    fd = os.open(os.environ["__PL_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
