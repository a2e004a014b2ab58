"""Stage 2: walk the syntax tree once, the way bash would run it, without executing anything.

The state is a list of *worlds*. A world is one consistent assignment of variables along one path
through the script. A condition packlint can decide from known values takes its branch; one it cannot
decide forks the world, and the fork records the decision (`Condition`) so later findings can name the
branch that triggers them. Worlds whose states become identical are merged again, so a branch that
only runs `mkdir` costs nothing. Values are `Known` or `Unknown`; command substitutions are never run.

The package, by concern: `run` (the run state and the statement dispatch), `statements` and `loops`
(control flow), `exit_status`, `conditionals` (`[[ ]]`, `test`), `commands`, `nested_code` (`bash -c`,
`eval`, submitted jobs), `sourcing`, `assignment`, `declarations`, `builtins`, `expansion`,
`parameters`, `arithmetic`, `words` (splitting and joining), `patterns`; `world` holds the state
records, `limits` the caps, `bash_tables` the fixed facts, `syntax` the tree helpers.
"""

from __future__ import annotations

import re
from pathlib import Path

from packlint.interpret.limits import MAX_WORK, STOP_CODES, WORK_BYTES
from packlint.interpret.run import Interpreter
from packlint.interpret.world import Diagnostic, LaunchInstance
from packlint.parse import ParsedScript, parse
from packlint.source import load, prepare
from packlint.values import Span

# interpreters whose scripts bash reads the same way (ShellCheck's sh, bash, dash, ksh, busybox)
_BOURNE = frozenset(("sh", "bash", "dash", "ksh", "ksh93", "mksh", "pdksh", "ash", "busybox"))
_SHEBANG = re.compile(rb"#![ \t]*(\S+)(?:[ \t]+(.*))?")


def foreign_interpreter(data: bytes) -> str | None:
    """The interpreter a `#!` line names when it is not a Bourne shell (tcsh, zsh, python, ...); None when
    the file has no shebang or names sh/bash/dash/ksh (`/usr/bin/env [-S] [VAR=x] bash` included)."""
    m = _SHEBANG.match(data.split(b"\n", 1)[0].rstrip(b"\r"))
    if m is None:
        return "fish (by its syntax: a block closed by `end`, no shebang)" if _fish_by_syntax(data) else None
    name = m.group(1).rsplit(b"/", 1)[-1]
    if name == b"env":
        rest = [w for w in (m.group(2) or b"").split() if not w.startswith(b"-") and b"=" not in w]
        if not rest:
            return None
        name = rest[0].rsplit(b"/", 1)[-1]
    text = name.decode("utf-8", "replace")
    return None if text in _BOURNE or not text else text


# fish's blocks close with a bare `end` (`for seed in 13 42` / `python main.py` / `end`): no Bourne shell has one;
# bash's own block keywords (`do`/`done`, `then`/`fi`, `esac`, `{`/`}`) absent
_FISH_END = re.compile(rb"^[ \t]*end[ \t]*(?:#.*)?\r?$", re.M)
_FISH_OPEN = re.compile(
    rb"^[ \t]*(?:for[ \t]+\w+[ \t]+in\b|if[ \t]|while[ \t]|function[ \t]+\S|begin[ \t]*$|switch[ \t])", re.M
)
_BASH_BLOCK = re.compile(rb"(?:^|[;&|\s])(?:do|done|then|fi|esac)(?:[;\s]|$)|\(\)\s*\{", re.M)


def _fish_by_syntax(data: bytes) -> bool:
    """A file without a shebang written in fish (kenziyuliu/lora-fairness names its fish launch scripts *.sh)."""
    return bool(_FISH_END.search(data) and _FISH_OPEN.search(data) and not _BASH_BLOCK.search(data))


def interpret_file(
    path: str,
    display: str,
    *,
    text: bytes | None,
    env: dict[str, str] | None,
    args: list[str] | None,
    known_env: tuple[str, ...],
    cwd: str | None = None,
) -> tuple[Interpreter, ParsedScript]:
    """Read, parse and interpret one script; the interpreter holds the launches and diagnostics."""
    source = prepare(text, display) if text is not None else load(path, display)
    interp = Interpreter(env=env, args=args, known_env=known_env, cwd=cwd, max_work=MAX_WORK)
    other = foreign_interpreter(source.data)
    if other is not None:
        # `#! /bin/tcsh` on a `*.sh` file (the CoNLL srlconll scripts): run as a program it is not bash's;
        # as ShellCheck (SC1071), packlint does not analyse it
        ps = parse(prepare(b"", display))
        span = Span(source.path, 1, 1, 1, len(source.line_text(0)) + 1)
        said = f"the script is {other}" if other.startswith("fish (") else f"the shebang names {other}"
        interp.diag("info", "unanalysed", f"{said}, not a Bourne shell: not analysed", span)
        return interp, ps
    ps = parse(source)
    real = path if path and Path(path).is_file() else None
    interp.display = display
    interp.run(ps, real)
    from packlint.env_hygiene import overwritten_exports

    for name, first, first_value, second, value, second_exports in overwritten_exports(ps, interp.replaced_values):
        # the first export may be deleted (PK105's fix) only when the second exports too: after
        # `export X=1; X=2` the plain X=2 reaches the launch through the first export
        interp.diagnostics.append(
            Diagnostic(
                "info",
                "env-overwritten",
                f"{name} is set again here before any command read it: its value {first_value!r} "
                f"exported at line {first.line} is lost (now {value!r})",
                second,
                first if second_exports else None,
            )
        )
    return interp, ps


__all__ = ["Diagnostic", "Interpreter", "LaunchInstance", "MAX_WORK", "STOP_CODES", "WORK_BYTES", "interpret_file"]
