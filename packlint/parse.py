"""Stage 1: bytes -> tree-sitter-bash syntax tree, plus syntax problems.

Nothing outside this module and the interpreter knows tree-sitter exists. tree-sitter's grammar has
gaps (`${X:$N+1}`, `$(((a+b)/c))`), so an ERROR node is confirmed with `bash -n` (parse only, never
executes): a script bash rejects is a syntax error; an ERROR node bash accepts is a local
"could not analyse" note and the rest of the script is still analysed.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING

from packlint.records import factory, record
from packlint.regex import LazyRegex
from packlint.source import SourceFile
from packlint.values import Span

if TYPE_CHECKING:
    from tree_sitter import Node


@record(eq=True)
class SyntaxProblem:
    severity: str  # "error": bash rejects the script; "info": a grammar gap bash accepts
    code: str  # "syntax" | "unanalysed"
    message: str
    span: Span


@record
class ParsedScript:
    source: SourceFile
    root: Node  # of kind "program"
    problems: list[SyntaxProblem] = factory(list)
    error_ranges: list[tuple[int, int]] = factory(list)  # byte ranges of ERROR nodes
    raw_expansions: list[str] = factory(list)  # `${...}` texts masked as $__PX<n>
    _scanned: bytes | None = None  # the text has_placeholders last looked at
    _placeholders: bool = False

    def has_placeholders(self) -> bool:
        """Whether the text holds a parser placeholder (`$__PLGAP___`, `$__PX3___`): most scripts do
        not, and then no piece of a word can carry one (see interpret.expansion.word_pieces)."""
        data = self.source.data
        if self._scanned is not data:
            self._scanned = data
            self._placeholders = b"$__P" in data
        return self._placeholders


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter

    return tree_sitter.Parser(tree_sitter.Language(_bash_language()))


def _bash_language():
    """The compiled grammar. Its package `__init__` imports importlib.resources (and with it tempfile,
    random, shutil) only to serve query files we never use, so the extension module is loaded
    directly when it can be found; otherwise the package is imported as usual."""
    import importlib.machinery
    import importlib.util
    import sys

    try:
        spec = importlib.util.find_spec("tree_sitter_bash")
        base = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
        if base and "tree_sitter_bash._binding" not in sys.modules:
            import os

            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(base, "_binding" + suffix)
                if os.path.exists(path):
                    loader = importlib.machinery.ExtensionFileLoader("tree_sitter_bash._binding", path)
                    binding_spec = importlib.util.spec_from_file_location(
                        "tree_sitter_bash._binding", path, loader=loader
                    )
                    if binding_spec is None:
                        raise ImportError(path)  # (caught below: the ordinary import)
                    module = importlib.util.module_from_spec(binding_spec)
                    loader.exec_module(module)
                    return module.language()
    except Exception:  # any surprise: the ordinary import below
        pass
    import tree_sitter_bash

    return tree_sitter_bash.language()


def _error_nodes(root) -> list:
    """ERROR and MISSING nodes, outermost only, found without recursion (trees can be deep)."""
    found: list = []
    if not root.has_error:
        return found
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append(node)
            continue
        for child in reversed(node.children):
            if child.has_error or child.is_missing:
                stack.append(child)
    return found


def _inner_errors(errors: list, limit: int = 64) -> list:
    """ERROR nodes inside the outermost ones, innermost first (up to `limit`): tree-sitter-bash may wrap the whole
    file in an ERROR from its first line when one expansion derails it (jintangxue/3D-PLOT-LLM's
    `${MASTER_PORT:-$((RANDOM % (65535 - 49152 + 1) + 49152))}`), and the gap to mask is the inner one."""
    found: list = []
    stack = [c for e in errors for c in e.children]
    while stack and len(found) < limit:
        node = stack.pop()
        if node.is_error:
            found.append(node)
        stack.extend(c for c in node.children if c.has_error)
    return found


_BASH_LINE = LazyRegex(r"line (\d+): (.*)")


_VERDICTS: dict[bytes, tuple[bool, int | None, str] | None] = {}  # the last few texts asked about


def bash_syntax_check(data: bytes) -> tuple[bool, int | None, str] | None:
    """(accepted, line, message) from `bash -n`, or None when bash is not available. Remembered for
    the last few texts: the parse asks about a script with errors, then PK900 (`bash_rejects`) asks
    again about the same text."""
    if data in _VERDICTS:
        return _VERDICTS[data]
    verdict = _run_bash_n(data)
    if len(_VERDICTS) >= 8:
        _VERDICTS.pop(next(iter(_VERDICTS)))
    _VERDICTS[data] = verdict
    return verdict


# `shopt -s extglob` as a command: at a line's start or after `;`, `&&`, `||`, `then`, `do`, `{` (FunASR's vendored
# openfst script: `set -euo pipefail; shopt -s extglob`)
_EXTGLOB_ON = re.compile(
    rb"(?m)(?:^|[;&|{]|\bthen|\bdo)[ \t]*shopt[ \t]+(?:-[a-z]*s[a-z]*[ \t]+)+(?:[\w-]+[ \t]+)*extglob\b"
)


def _seekable(data: bytes) -> int | None:
    """A file descriptor of an anonymous in-memory file holding `data`, at its start (Linux's memfd), or None. bash
    reads a script from a pipe one byte at a time (it cannot seek back), twice the CPU of `bash -n` on a 5 KB
    script; from a file, in blocks."""
    create = getattr(os, "memfd_create", None)
    if create is None:
        return None
    try:
        fd = create("packlint-script", getattr(os, "MFD_CLOEXEC", 1))
    except OSError:
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        return None
    return fd


def _run_bash_n(data: bytes) -> tuple[bool, int | None, str] | None:
    import subprocess  # only scripts with parse errors or CRLF pay for these imports

    from packlint.tools import find_program, tool_env

    bash = find_program("bash")
    if bash is None:
        return None
    try:
        argv = [bash, "--norc", "--noprofile", "-n", "/dev/stdin"]
        if _EXTGLOB_ON.search(data):
            # `bash -n` runs no `shopt`: a script that turns extglob on (the MindFormers run_distribute.sh shape,
            # `shopt -s extglob` then `rm -rf ./d/!(rank_*)`) is parsed by bash with it on when it runs
            argv[3:3] = ["-O", "extglob"]
        script = _seekable(data)
        try:
            if script is None:
                proc = subprocess.run(argv, input=data, capture_output=True, timeout=20, env=tool_env())
            else:
                proc = subprocess.run(argv, stdin=script, capture_output=True, timeout=20, env=tool_env())
        finally:
            if script is not None:
                os.close(script)
    except (OSError, subprocess.SubprocessError):
        from packlint.caches import taint  # (out of time: not an answer about the text, result_cache)

        taint()
        return None
    if proc.returncode == 0:
        return True, None, ""
    text = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    for line in text:
        m = _BASH_LINE.search(line)
        if m:
            return False, int(m.group(1)), m.group(2).strip()
    return False, None, (text[0] if text else "bash -n rejected the script")


GAP_VARIABLE = "__PLGAP"  # `$__PLGAP___` stands for a region packlint could not parse: an unknown value
_ASSIGNMENT_LINE = LazyRegex(rb"^(\s*(?:(?:export|local|declare|readonly|typeset)\s+(?:[-+]\w+\s+)*)?[A-Za-z_]\w*\+?=)")


def _matching_end(data: bytes, start: int) -> int | None:
    """End (exclusive) of the `${...}` or `$((...))` that starts at `start`, by bracket counting on
    its line."""
    if data.startswith(b"${", start):
        opening, closing = b"{", b"}"
    elif data.startswith(b"$((", start):
        opening, closing = b"(", b")"
    else:
        return None
    depth, i = 0, start + 1
    while i < len(data) and data[i : i + 1] != b"\n":
        c = data[i : i + 1]
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _placeholder(data: bytearray, start: int, end: int) -> bool:
    """Replace data[start:end] by `$__PLGAP___...` of the same length (positions stay put)."""
    length = end - start
    if length < len(GAP_VARIABLE) + 1:
        return False
    data[start:end] = b"$" + GAP_VARIABLE.encode() + b"_" * (length - len(GAP_VARIABLE) - 1)
    return True


def _mask_known_gaps(source: SourceFile, problems: list[SyntaxProblem]) -> None:
    """`$(((a+b)/c))` is valid bash that tree-sitter-bash misreads *without* an error node (it glues
    the next lines into one command), so such regions are masked before parsing: their value is
    unknown, the rest of the script is read correctly."""
    if b"$(((" not in source.data:
        return
    data = bytearray(source.data)
    pos = data.find(b"$(((")
    while pos != -1:
        end = _matching_end(bytes(data), pos)
        if end is not None and _placeholder(data, pos, end):
            row = source.data.count(b"\n", 0, pos)
            col = pos - (source.data.rfind(b"\n", 0, pos) + 1)
            problems.append(
                SyntaxProblem(
                    "info",
                    "unanalysed",
                    "could not analyse `$(((...)))` (a tree-sitter-bash gap); its value is unknown",
                    source.span_of_points((row, col), (row, col + end - pos)),
                )
            )
        pos = data.find(b"$(((", pos + 1)
    source.data = bytes(data)


# tree-sitter-bash 0.25's scanner crashes (SIGSEGV) on `{` followed by a code point of planes 14-16
# (U+E0000 and above: tags, variation selectors supplement, private use), e.g. the 7 bytes of
# `echo {\U0010ffff`; such a character (its 4 UTF-8 bytes start with F3 A0-BF or F4) is read as
# U+10000 (also 4 bytes: every offset and column stays the same) and an info says so.
_HIGH_PLANE = re.compile(rb"\xf3[\xa0-\xbf][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf][\x80-\xbf]")
_HIGH_PLANE_STAND_IN = "\U00010000".encode()


_CRLF_CONTINUATION = re.compile(rb"(?<!\\)((?:\\\\)*)\\\r\n")


def _mask_crlf_continuations(source: SourceFile, problems: list[SyntaxProblem]) -> None:
    """In a CRLF file `\\` before CR LF is no line continuation: bash quotes the CR (a word `$'\\r'`) and the LF
    ends the command, so each `--flag \\` line after it is a command of its own (Tele-AI/TeleChat2's CRLF
    train_scripts: packlint joined them into one launch, 28 false PK202). tree-sitter-bash joins them: the pair
    becomes two blanks (same length: spans stay), and an info says the line's word `$'\\r'` is not modelled.
    Only outside quotes on that line (an odd count of quotes before it: left as it is)."""
    if not source.crlf or b"\\\r\n" not in source.data:
        return
    data = bytearray(source.data)
    for m in _CRLF_CONTINUATION.finditer(source.data):
        at = m.end() - 3  # the backslash
        line_start = source.data.rfind(b"\n", 0, at) + 1
        before = source.data[line_start:at]
        if before.count(b"'") % 2 or before.replace(b'\\"', b"").count(b'"') % 2:
            continue
        data[at : at + 2] = b"  "
        row = source.data.count(b"\n", 0, at)
        col = len(before.decode("utf-8", "replace"))
        problems.append(
            SyntaxProblem(
                "info",
                "unanalysed",
                "a backslash before CR LF is no line continuation in bash (it quotes the CR, and the line ends the "
                "command): the next line is a command of its own; the word $'\\r' it passes is not modelled",
                source.span_of_points((row, col), (row, col + 1)),
            )
        )
    source.data = bytes(data)


def _mask_high_planes(source: SourceFile, problems: list[SyntaxProblem]) -> None:
    """Characters the parser cannot take (see _HIGH_PLANE) become U+10000, with an info per line."""
    if b"\xf3" not in source.data and b"\xf4" not in source.data:
        return
    found = list(_HIGH_PLANE.finditer(source.data))
    if not found:
        return
    rows = set()
    for m in found:
        pos = m.start()
        row = source.data.count(b"\n", 0, pos)
        if row in rows:
            continue
        rows.add(row)
        col = len(source.data[source.data.rfind(b"\n", 0, pos) + 1 : pos].decode("utf-8", "replace"))
        problems.append(
            SyntaxProblem(
                "info",
                "unanalysed",
                "a character of Unicode planes 14-16 (U+E0000 and above) is read as U+10000: "
                "tree-sitter-bash cannot parse it",
                source.span_of_points((row, col), (row, col + 1)),
            )
        )
    source.data = _HIGH_PLANE.sub(_HIGH_PLANE_STAND_IN, source.data)


# `${...}` with no quote, backslash or brace inside: tree-sitter reads it right (see below)
_PLAIN_BRACED = re.compile(rb"\$\{[^{}'\"\\]*\}")
RAW_EXPANSION = "__PX"  # `$__PX3___` stands for the 4th `${...}` kept as raw text (see below)


def _raw_region_end(data: bytes, start: int, end_of_line: int) -> int | None:
    """End of the `${...}` at `start`, honouring backslashes and quotes inside it (tree-sitter does not)."""
    depth, i = 0, start + 1
    while i < end_of_line:
        c = data[i]
        if c == 0x5C:  # backslash
            i += 2
            continue
        if c in (0x27, 0x22):  # ' or "
            j = data.find(bytes([c]), i + 1, end_of_line)
            if j == -1:
                return None
            i = j + 1
            continue
        if c == 0x7B:
            depth += 1
        elif c == 0x7D:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _mask_raw_expansions(source: SourceFile, raw_expansions: list[str]) -> None:
    """`${X//\\//_}` and `"${X//'/'/_}"` are valid bash that tree-sitter-bash misreads (a wrong value, or
    an ERROR that swallows the rest of the file). Such expansions — those with a quote or backslash
    inside — are replaced, keeping their length, by `$__PX<n>___` and evaluated by the interpreter
    from their raw text. Regions inside single quotes and comments are left alone."""
    data = source.data
    if b"${" not in data:
        return
    out = bytearray(data)
    changed = False
    for start in source.line_starts():
        end = data.find(b"\n", start)
        end = len(data) if end == -1 else end
        n_braced = data.count(b"${", start, end)
        if n_braced == 0 or n_braced == len(_PLAIN_BRACED.findall(data, start, end)):
            continue  # every `${...}` on the line is plain (no quote or backslash inside): none to mask
        i, in_double = start, False
        while i < end:
            c = data[i]
            if c == 0x5C:
                i += 2
                continue
            if c == 0x27 and not in_double:
                j = data.find(b"'", i + 1, end)
                if j == -1:
                    break
                i = j + 1
                continue
            if c == 0x22:
                in_double = not in_double
            elif c == 0x23 and not in_double and (i == start or data[i - 1] in b" \t;"):
                break  # a comment
            elif c == 0x24 and data[i + 1 : i + 2] == b"{":
                stop = _raw_region_end(data, i, end)
                if stop is None:
                    break
                inner = data[i + 2 : stop - 1]
                if any(ch in inner for ch in b"'\"\\") and b"$(" not in inner and b"`" not in inner:
                    name = f"{RAW_EXPANSION}{len(raw_expansions)}".encode()
                    if stop - i >= len(name) + 1:
                        out[i:stop] = b"$" + name + b"_" * (stop - i - len(name) - 1)
                        raw_expansions.append(data[i:stop].decode("utf-8", "replace"))
                        changed = True
                i = stop
                continue
            i += 1
    if changed:
        source.data = bytes(out)


def _recover_gaps(source: SourceFile, result: ParsedScript, errors: list) -> list[tuple[int, int]]:
    """A grammar gap (`${X:$N+1}`) can derail tree-sitter for the lines after it. Mask the expansion
    around the error with an unknown placeholder of the same length, or, failing that, make the
    assignment on that line assign an unknown value; then parse again. Returns the byte ranges masked (the
    constructs left unknown), where the parse that keeps them got fewer errors."""
    data = bytearray(source.data)
    masked: list[tuple[int, int]] = []
    kept: list[tuple[int, int]] = []
    for _ in range(5):
        changed = False
        starts = source.line_starts()
        for node in [*errors, *_inner_errors(errors)]:
            row = node.start_point[0]
            start = starts[row]
            end = data.find(b"\n", start)
            end = len(data) if end == -1 else end
            offset = node.start_byte
            snapshot = bytes(data)
            for m in re.finditer(rb"\$\{|\$\(\(", snapshot[start:end]):
                s0 = start + m.start()
                e0 = _matching_end(snapshot, s0)
                if e0 is not None and s0 <= offset <= e0 and _placeholder(data, s0, e0):
                    changed = True
                    masked.append((s0, e0))
                    break
            else:
                line = snapshot[start:end]
                assignment = _ASSIGNMENT_LINE.match(line)
                if assignment is not None:
                    new = assignment.group(1) + b"$" + GAP_VARIABLE.encode()
                    if len(new) <= len(line) and not line.startswith(new):
                        data[start:end] = new + b"_" * (len(line) - len(new))
                        changed = True
                        masked.append((start, end))
        if not changed:
            break
        tree = _parser().parse(bytes(data))
        new_errors = _error_nodes(tree.root_node)
        if len(new_errors) >= len(errors) and not (errors and new_errors and _narrower(new_errors, errors)):
            break
        kept = list(masked)
        source.data = bytes(data)
        result.root = tree.root_node
        result.error_ranges = [(n.start_byte, n.end_byte) for n in new_errors]
        errors = new_errors
        if not errors:
            break
    return kept


def _narrower(new: list, old: list) -> bool:
    """The new parse's errors cover fewer bytes than the old one's (one error for the whole file gave way to a
    local one)."""
    return sum(n.end_byte - n.start_byte for n in new) < sum(n.end_byte - n.start_byte for n in old)


def _check_crlf(source: SourceFile, result: ParsedScript) -> None:
    """tree-sitter reads CR as blank space, bash does not (`then\r` is no keyword): ask bash."""
    first_line = Span(source.path, 1 + source.line_base, 1, 1 + source.line_base, 1)
    verdict = bash_syntax_check(source.data)
    if verdict is not None and not verdict[0]:
        _, line, message = verdict
        line = line or 1
        message = message.removeprefix("syntax error: ")
        opened = _unclosed_by_cr(source, result) if "end of file" in message else None
        if opened is not None:
            # bash reads on to the end of the file looking for the keyword that ends the compound command
            # (`then\r` is a word): nothing from that command on runs, so the problem is where it starts
            line, keyword = opened
            message += f": `{keyword}\\r` in the command that starts here is a word to bash, not the keyword"
        text = source.line_text(line - 1)
        span = Span(source.path, line + source.line_base, 1, line + source.line_base, len(text) + 1)
        result.problems.append(
            SyntaxProblem(
                "error",
                "syntax",
                f"syntax error: {message} (the file has CRLF line endings: bash reads "
                "the carriage return as part of the line; convert it with `dos2unix`)",
                span,
            )
        )
        return
    words = _crlf_words(source.data)
    shown = f" ({', '.join(words)})" if words else ""
    result.problems.append(
        SyntaxProblem(
            "warning",
            "crlf",
            "CRLF line endings: bash keeps the carriage return, so the last word of "
            f"every line ends in \\r{shown}; convert the file with `dos2unix`",
            first_line,
        )
    )


_CR_KEYWORD = re.compile(rb"(?:^|[\s;&|])(then|do|else|fi|done|esac|[{}])\r(?=\n|$)", re.M)
_COMPOUND = frozenset(
    ("if_statement", "for_statement", "c_style_for_statement", "while_statement", "case_statement")
    + ("compound_statement", "function_definition")
)


def _unclosed_by_cr(source: SourceFile, result: ParsedScript) -> tuple[int, str] | None:
    """(line, keyword) of the first top-level compound command whose text has a keyword bash reads with the
    CR as part of it (`then\r`): bash's "unexpected end of file" comes from it (SeanLeng1/Reward-Calibration's
    OpenRLHF scripts: `if [[ ${1} != "slurm" ]]; then\r ... fi\r`)."""
    for node in result.root.named_children:
        if node.type not in _COMPOUND:
            continue
        m = _CR_KEYWORD.search(source.data, node.start_byte, node.end_byte + 1)
        if m is not None:
            return node.start_point[0] + 1, m.group(1).decode()
    return None


_CRLF_WORD = 40  # characters of a word shown in the PK904 message
_SECRET_NAME = re.compile(r"(?i)token|secret|passw|key|auth|credential")


def _crlf_words(data: bytes, limit: int = 2) -> list[str]:
    """The last words of the file's first command lines as bash reads them (`train.py\\r`): the PK904
    message's examples, taken from the file itself. Comments, blank lines and continued lines (a `\\` before
    the CR quotes it) are skipped."""
    out: list[str] = []
    for raw in data.split(b"\n"):
        if not raw.endswith(b"\r"):
            continue
        line = raw[:-1].strip()
        if not line or line.startswith(b"#") or line.endswith(b"\\"):
            continue
        word = line.split()[-1].decode("utf-8", "replace")
        name, eq, _ = word.partition("=")
        if eq and _SECRET_NAME.search(name):  # (`HF_TOKEN=hf_...`: the value is never shown)
            word = f"{name}=..."
        if len(word) > _CRLF_WORD:
            word = "..." + word[-_CRLF_WORD:]
        shown = f"{word}\\r"
        if shown not in out:
            out.append(shown)
        if len(out) == limit:
            break
    return out


_OPEN_REDIRECT = re.compile(rb"[<>][ \t]*\n")


def _in_comment(root: Node, offset: int) -> bool:
    node = root.descendant_for_byte_range(offset, offset + 1)
    return node is not None and node.type == "comment"


def _check_open_redirect(source: SourceFile, result: ParsedScript) -> None:
    """`export PYTHONPATH=$PYTHONPATH:<your_path>` (a template placeholder) is a redirection with no
    target: bash rejects it ("syntax error near unexpected token `newline'"), tree-sitter-bash reads the
    next line as the target without an error. A line ending in `<` or `>` is asked of bash."""
    if any(p.code == "syntax" for p in result.problems):
        return
    if all(_in_comment(result.root, m.start()) for m in _OPEN_REDIRECT.finditer(source.data)):
        return  # no line ends in `<` or `>` outside a comment (`X=$1 #<path>`): nothing to ask
    _ask_bash(source, result)


# reserved words that bash never runs as a command: unquoted in a command's first position they are
# syntax (`then` with no `if`/`elif` before it is "syntax error near unexpected token `then'")
_RESERVED_IN_COMMAND_POSITION = frozenset((b"then", b"elif", b"else", b"fi", b"do", b"done", b"esac", b"}"))


@lru_cache(maxsize=1)
def _command_names_query():
    import tree_sitter

    return tree_sitter.Query(_parser().language, "(command_name (word) @name)")


def _check_reserved_commands(source: SourceFile, result: ParsedScript) -> None:
    """LMFlow's run_merge_lora.sh: `--device ${device} \\` continues into `elif [ ... ]; then`, so `elif [ ... ]`
    are words of the command and `then` stands where a command goes. tree-sitter-bash reads `then` as a
    command's name without an error; bash rejects the file. A command named by an unquoted reserved word
    that cannot start a command is asked of bash (`bash -n`): where bash rejects the script, it is a
    syntax error at bash's line (PK900), and nothing from the top-level command holding it on runs."""
    if any(p.code == "syntax" for p in result.problems):
        return
    import tree_sitter

    names = tree_sitter.QueryCursor(_command_names_query()).captures(result.root).get("name", [])
    if any(n.text in _RESERVED_IN_COMMAND_POSITION for n in names):
        _ask_bash(source, result)


def _ask_bash(source: SourceFile, result: ParsedScript) -> None:
    """A shape tree-sitter-bash accepts and bash may not: bash's verdict, as a syntax error at its line."""
    verdict = bash_syntax_check(source.data)
    if verdict is None or verdict[0]:
        return
    _, line, message = verdict
    line = line or 1
    text = source.line_text(line - 1)
    col = len(text) - len(text.lstrip()) + 1
    if not message.startswith("syntax error"):
        message = f"syntax error: {message}"
    result.problems.append(
        SyntaxProblem(
            "error",
            "syntax",
            message,
            Span(source.path, line + source.line_base, col, line + source.line_base, len(text) + 1),
        )
    )


def parse(source: SourceFile) -> ParsedScript:
    problems: list[SyntaxProblem] = []
    raw_expansions: list[str] = []
    _mask_known_gaps(source, problems)
    _mask_high_planes(source, problems)
    _mask_raw_expansions(source, raw_expansions)
    _mask_crlf_continuations(source, problems)
    tree = _parser().parse(source.data)
    root = tree.root_node
    result = ParsedScript(source=source, root=root, problems=problems, raw_expansions=raw_expansions)
    errors = _error_nodes(root)
    if source.crlf:
        _check_crlf(source, result)
    if not errors:
        _check_open_redirect(source, result)
        _check_reserved_commands(source, result)
        return result
    result.error_ranges = [(n.start_byte, n.end_byte) for n in errors]
    if any(p.code == "syntax" for p in result.problems):
        return result
    verdict = bash_syntax_check(source.data)
    first = errors[0]
    if verdict is not None and verdict[0]:
        masked = _recover_gaps(source, result, errors)
        # where the errors were masked: the constructs left unknown, and any error the new parse still has
        spans = [source.span_of_bytes(s, e) for s, e in masked] if masked else []
        spans += [source.span(n) for n in (_error_nodes(result.root) if masked else errors)]
        for span in spans:
            result.problems.append(
                SyntaxProblem(
                    "info",
                    "unanalysed",
                    "could not analyse this construct (bash accepts it; packlint's parser does not); "
                    "values it sets are unknown",
                    span,
                )
            )
        return result
    if verdict is None:
        result.problems.append(
            SyntaxProblem("error", "syntax", "syntax error (bash not available to confirm)", source.span(first))
        )
        return result
    _, line, message = verdict
    span = source.span(first)
    if line is not None:
        on_line = [n for n in errors if n.start_point[0] + 1 == line]
        if on_line:
            span = source.span(on_line[0])
        else:
            row = line - 1
            text = source.line_text(row)
            col = len(text) - len(text.lstrip()) + 1
            span = Span(source.path, line + source.line_base, col, line + source.line_base, len(text) + 1)
    if not message.startswith("syntax error"):
        message = f"syntax error: {message}"
    result.problems.append(SyntaxProblem("error", "syntax", message, span))
    return result
