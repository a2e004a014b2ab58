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


def main() -> int:
    name = os.path.basename(sys.argv[0])
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
