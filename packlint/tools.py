"""The helper programs packlint starts (`bash -n`, `grep -F`, `git log`), and how: never through a PATH
entry that can name the checked tree, never with a configuration that can start another program.

- `find_program(name)`: the program's absolute path, looked up only in the *absolute* entries of PATH
  (`.`, an empty entry and any relative entry are skipped: a `grep` or `bash` planted in the checked
  directory is never found, R28), else None (the caller then does without it).
- `tool_env(**extra)`: the environment a helper runs with: PATH (the absolute entries only), LANG/LC_ALL
  C, TMPDIR, and `extra`. Nothing else of the caller's environment goes through (no BASH_ENV or ENV, no
  GIT_* variable, no PAGER).
- `git_argv(git, top, args)`: `git` run on the repository at `top` with every configuration key that can
  start a program overridden on the command line (`-c` wins over the repository's `.git/config` and its
  includes): signature verification and its programs (R01: `log.showSignature` + `gpg.program`), pagers,
  external diff and textconv drivers, fsmonitor, hooks, and every transport (a partial clone's lazy fetch
  could run `ext::` commands). `GIT_ENV` goes with it: no system or global configuration, no attributes
  file of the system, no replace objects, no prompts, no optional locks.

docs/security.md ("Processes") says the same for users.
"""

from __future__ import annotations

import os

from packlint.caches import memo

_FOUND: dict[tuple[str, str], str | None] = memo()

# a program that cannot exist: where git would start a program, it is given this (and fails)
NO_PROGRAM = "/nonexistent/packlint-runs-no-program"

GIT_OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.untrackedCache=false",
    "core.sshCommand=" + NO_PROGRAM,
    "core.askPass=" + NO_PROGRAM,
    "core.gitProxy=" + NO_PROGRAM,
    "core.alternateRefsCommand=" + NO_PROGRAM,
    "diff.external=",
    "log.showSignature=false",
    "gpg.program=" + NO_PROGRAM,
    "gpg.openpgp.program=" + NO_PROGRAM,
    "gpg.ssh.program=" + NO_PROGRAM,
    "gpg.x509.program=" + NO_PROGRAM,
    "protocol.allow=never",
    "credential.helper=",
    "pager.log=false",
    "color.ui=false",
    "log.mailmap=false",
    "maintenance.auto=false",
    "gc.auto=0",
    "fetch.recurseSubmodules=false",
    "safe.bareRepository=explicit",
)

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_ASKPASS": NO_PROGRAM,
    "SSH_ASKPASS": NO_PROGRAM,
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}


def safe_path_entries(path: str | None = None) -> list[str]:
    """The absolute entries of PATH (os.defpath's when PATH is unset), in order, without repeats."""
    raw = os.environ.get("PATH") if path is None else path
    if raw is None:
        raw = os.defpath
    out: list[str] = []
    for entry in raw.split(os.pathsep):
        if entry and os.path.isabs(entry) and entry not in out:
            out.append(entry)
    return out


def find_program(name: str) -> str | None:
    """The absolute path of the executable `name` in an absolute PATH entry, or None."""
    raw = os.environ.get("PATH", os.defpath)
    key = (raw, name)
    if key in _FOUND:
        return _FOUND[key]
    found = None
    for entry in safe_path_entries(raw):
        cand = os.path.join(entry, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            found = cand
            break
    _FOUND[key] = found
    return found


def tool_env(**extra: str) -> dict[str, str]:
    """A minimal environment for a helper program (see the module docstring)."""
    env = {"PATH": os.pathsep.join(safe_path_entries()), "LC_ALL": "C", "LANG": "C"}
    tmp = os.environ.get("TMPDIR")
    if tmp and os.path.isabs(tmp):
        env["TMPDIR"] = tmp
    env.update(extra)
    return env


def git_argv(git: str, top: str, args: list[str]) -> list[str]:
    """`git --no-pager -c KEY=VALUE... -C TOP ARGS...` with every program-starting key neutralised."""
    argv = [git, "--no-pager", "--no-replace-objects"]
    for override in GIT_OVERRIDES:
        argv += ["-c", override]
    return [*argv, "-C", top, *args]


def git_env() -> dict[str, str]:
    home = os.environ.get("HOME", "/")
    return tool_env(HOME=home if os.path.isabs(home) else "/", **GIT_ENV)
