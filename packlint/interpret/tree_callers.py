"""The scripts of the checkout that run a script with a variable set (issue 26).

`NNODES=${NNODES:-1}` in a script the checkout's own launcher runs as
`mpirun -x NNODES=${node_num} ... bash -c "bash ${TRAIN_SCRIPT} ..."` (HYGON-AI/Megatron-LM-das) takes the
default only where that variable is not set by whoever runs the script; a script of the checkout that
runs it with the variable set says it may be: the value is then not known. The forms read, anywhere in
the caller (its text, not its analysis: a caller's branch may set it or not):

- `export NAME=...` / `export NAME` (and `declare -x`), `set -a` is not read;
- a command's prefix assignment, `NAME=x bash callee.sh`, and `env NAME=x ...`;
- a launcher's environment options: `mpirun -x NAME=x` / `-x NAME`, `mpiexec -genv NAME x`,
  `srun --export=ALL,NAME=x`, `docker run -e NAME=x` / `--env NAME=x`.

A caller is a shell file of the checkout that names the script to run it: its path relative to the caller,
to the checkout root, or behind a variable (`${DIR}/train.sh`), or its bare name from the script's own
directory (`TRAIN_SCRIPT=${TRAIN_SCRIPT:-train_x.sh}` beside it). A file that `source`s it is not one (its
settings are in the analysis already). The index is built once per checkout and run (caches.run_memo),
within bounds on the files walked and read."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from packlint import caches
from packlint.discover import SKIP_DIRS, is_launch_file
from packlint.errors import PacklintError
from packlint.regex import LazyRegex

MAX_WALKED = 20_000  # directory entries looked at per checkout
MAX_SHELL_FILES = 4_000  # shell files read per checkout
MAX_FILE_BYTES = 512 * 1024

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_VALUE = r"""(?:[^\s;&|()'"]|"[^"\n]*"|'[^'\n]*')*"""  # one character or one quoted run: linear
_EXPORT = LazyRegex(r"(?:^|[;&|(]|\bthen\b|\bdo\b|\belse\b)\s*(?:export|declare\s+-\w*x\w*)\s+([^;&|#\n]*)", re.M)
_EXPORT_ITEM = LazyRegex(rf"(?:^|\s)({_NAME})(?:=({_VALUE}))?(?=\s|$)")
_PREFIX = LazyRegex(
    r"(?:^|[;&|(`]|\$\(|\bthen\b|\bdo\b|\belse\b|\benv\b(?:\s+-\S+)*)[ \t]*"
    rf"((?:{_NAME}={_VALUE}[ \t]+)+)(?=[^\s=;&|#]+(?:\s|$))",
    re.M,
)
_PREFIX_ITEM = LazyRegex(rf"({_NAME})=({_VALUE})")
_LAUNCHER_ENV = LazyRegex(
    rf"(?:^|\s)(?:-x|-e|--env|--export)[ \t=]+[\"']?((?:ALL,|NONE,)?{_NAME}(?:=[^\s,\"']*)?"
    rf"(?:,{_NAME}(?:=[^\s,\"']*)?)*)",
    re.M,
)
_GENV = LazyRegex(rf"(?:^|\s)-genv[ \t]+({_NAME})[ \t]+({_VALUE})", re.M)


@dataclass(frozen=True)
class Setting:
    """`name` set for the scripts `caller` runs, at `line`, as `text`; `value` as written (None: the
    caller's own value passed on, `-x NAME`, `export NAME`)."""

    caller: str
    line: int
    text: str
    name: str
    value: str | None


Memo = dict[tuple[str, str], Any]
_MEMO: Memo = caches.run_memo()


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _settings(rel: str, text: str) -> dict[str, list[Setting]]:
    """The variables the shell file `rel` sets for the commands it runs (see the module's forms)."""
    out: dict[str, list[Setting]] = {}

    def add(name: str, value: str | None, start: int, shown: str) -> None:
        if name in ("ALL", "NONE"):
            return
        line, had = _line_of(text, start), out.setdefault(name, [])
        if not any(s.line == line and s.value == value for s in had):  # (`declare -x C=3` is read twice)
            had.append(Setting(rel, line, shown.strip()[:120], name, value))

    for m in _EXPORT.finditer(text):
        for item in _EXPORT_ITEM.finditer(m.group(1)):
            if not item.group(1).startswith("-"):
                add(item.group(1), item.group(2), m.start(1), m.group(0))
    for m in _PREFIX.finditer(text):
        for item in _PREFIX_ITEM.finditer(m.group(1)):
            add(item.group(1), item.group(2), m.start(1), m.group(0))
    for m in _GENV.finditer(text):
        add(m.group(1), m.group(2), m.start(), m.group(0))
    for m in _LAUNCHER_ENV.finditer(text):
        for part in m.group(1).split(","):
            name, eq, value = part.partition("=")
            add(name, value if eq else None, m.start(1), m.group(0))
    return out


_NOT_HEAD = re.compile(r"""[\s"'=;|&()<>]""")  # what ends a word (_mentions' head cannot hold it)
_UP_TO_LAST_NOT_HEAD = re.compile(r"""[\s\S]*[\s"'=;|&()<>]""")


def _words_with(text: str, base: str) -> list[tuple[int, int]]:
    """The spans of the words of `text` (runs of characters a word's head can hold) that hold `base`, found
    with `str.find`: a mention lies within one (the characters around a word are no word characters, dots or
    dashes); the whole text when `base` itself holds a character that ends a word."""
    if not base or _NOT_HEAD.search(base):
        return [(0, len(text))]
    spans = []
    pos = 0
    while (at := text.find(base, pos)) >= 0:
        before = _UP_TO_LAST_NOT_HEAD.match(text, pos, at)
        start = before.end() if before else pos
        after = _NOT_HEAD.search(text, at + len(base))
        end = after.start() if after else len(text)
        spans.append((start, end))
        pos = end
    return spans


def _mentions(text: str, base: str) -> list[str]:
    """The words of `text` that name a file called `base` to run it (not `source`/`.` it): each as
    written, up to the name. (The pattern is matched within the words that hold `base`, not over the
    whole text: its lazy head made it try every word of every file, a fifth of a one-script check.)"""
    found = []
    pattern = re.compile(rf"""(?<![\w.-])([^\s"'=;|&()<>]*?){re.escape(base)}(?![\w.-])""")
    for start, end in _words_with(text, base):
        for m in pattern.finditer(text[start:end]):
            at, head_at = start + m.start(), start + m.start(1)
            before = text[max(0, at - 12) : at].rstrip(" \t\"'")
            if re.search(r"(?:^|[\s;&|(])(?:source|\.)$", before):
                continue
            head = m.group(1)
            if head_at > 0 and text[head_at - 1] in ")}`":  # `$(dirname $0)/x.sh`, `${DIR}/x.sh`
                head = "$" + head
            found.append(head)
    return found


def _names_script(head: str, caller_dir: str, script: str, root: str) -> bool:
    """`head` (what precedes the script's name in a word of the caller) names `script`."""
    script_dir = os.path.dirname(script)
    head = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=]$", "", head)  # `${TRAIN_SCRIPT:-train_x.sh}`
    head = head[2:] if head.startswith("./") else head
    if "$" in head or "`" in head or ")" in head or "}" in head:
        tail = re.split(r"[$`)}]", head)[-1].lstrip("/")
        if not tail:
            return True  # `${DIR}/train.sh`: the variable may name the script's directory
        return script_dir.endswith(os.sep + tail.rstrip("/")) or script_dir == tail.rstrip("/")
    if not head:
        return caller_dir == script_dir
    for base in (caller_dir, root):
        if os.path.normpath(os.path.join(base, head)) == script_dir:
            return True
    # a container path (`/workspace/PROJ/examples/x/`): it ends with the script's directory in the checkout
    rel = os.path.relpath(script_dir, root)
    return os.path.isabs(head) and (os.path.normpath(head) + os.sep).endswith(os.sep + rel + os.sep)


def _shell_files(root: str) -> list[str]:
    files: list[str] = []
    walked = 0
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        walked += len(dirs) + len(names)
        files.extend(p for p in (os.path.join(dirpath, n) for n in sorted(names)) if is_launch_file(p))
        if walked > MAX_WALKED or len(files) >= MAX_SHELL_FILES:
            break
    return files[:MAX_SHELL_FILES]


def _memo(local: Memo) -> Memo:
    """The run's memo while a check run is on, else the analysis's own (`local`)."""
    return _MEMO if caches.IN_RUN[0] else local


def _index(root: str, local: Memo) -> list[tuple[str, str]]:
    """(path, text) of the checkout's shell files (what each sets is read only for a file that names the
    script asked about: `_settings_of`; reading every file's settings cost a one-script check a second in a
    checkout of 800 scripts)."""
    key = ("index", root)
    memo = _memo(local)
    if key in memo:
        return memo[key]
    from packlint.safe_io import read_bounded

    out = []
    for path in _shell_files(root):
        try:
            text = read_bounded(path, MAX_FILE_BYTES, "shell script").decode("utf-8", "replace")
        except PacklintError:
            continue
        out.append((path, text))
    memo[key] = out
    return out


def _settings_of(path: str, text: str, root: str, local: Memo) -> dict[str, list[Setting]]:
    key = ("settings", path)
    memo = _memo(local)
    if key not in memo:
        memo[key] = _settings(os.path.relpath(path, root), text)
    return memo[key]


def _callers(script: str, root: str, local: Memo) -> list[tuple[str, str]]:
    """(path, text) of the checkout's shell files that run `script` (once per script and run)."""
    key = ("callers", script)
    memo = _memo(local)
    if key not in memo:
        base = os.path.basename(script)
        out = []
        for path, text in _index(root, local):
            if base not in text or os.path.normpath(path) == script:
                continue
            caller_dir = os.path.dirname(os.path.normpath(path))
            if any(_names_script(head, caller_dir, script, root) for head in _mentions(text, base)):
                out.append((path, text))
        memo[key] = out
    return memo[key]


def callers_setting(script: str, name: str, root: str, local: Memo) -> list[Setting]:
    """How the checkout's scripts that run `script` set `name` for it (empty: none does)."""
    script = os.path.normpath(os.path.abspath(script))
    found: list[Setting] = []
    for path, text in _callers(script, root, local):
        if name in text:  # (what a caller sets is read only for a caller, and once)
            found.extend(_settings_of(path, text, root, local).get(name, []))
    return found


def script_root(script: str, local: Memo) -> str | None:
    """The checkout root of `script` (packlint.codebase.resolve), memoised."""
    key = ("root", script)
    memo = _memo(local)
    if key in memo:
        return memo[key]
    from packlint.codebase.resolve import script_checkout_dirs

    dirs = script_checkout_dirs(script)
    root = dirs[-1] if dirs else None
    memo[key] = root
    return root


def set_by_caller(stack: list[str], name: str, default: str | None, local: Memo) -> str | None:
    """Why `${name:-default}` is not known in the scripts of `stack` (the running and sourced files,
    innermost last): a script of the checkout runs one of them with `name` set, to something other than
    the default (or to a value it does not write). None: no caller in the tree sets it."""
    for script in reversed(stack):
        root = script_root(script, local)
        if root is None:
            continue
        found = callers_setting(script, name, root, local)
        if not found or (default is not None and all((s.value or "").strip("\"'") == default for s in found)):
            continue
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return (
            f"${name} is set by {first.caller}:{first.line} (`{first.text}`){more}, a script of the checkout "
            f"that runs {os.path.basename(script)}: the default holds only where it does not"
        )
    return None
