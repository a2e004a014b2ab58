"""Word expansion: a word node becomes pieces (quotes, tilde, braces, `$( )`, `$(( ))`)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from packlint.interpret import arithmetic, parameters
from packlint.interpret.bash_tables import SCRIPT_DIR
from packlint.interpret.limits import MAX_NESTING
from packlint.interpret.patterns import glob_escape
from packlint.interpret.syntax import snippet, text_of, translated_dollar
from packlint.interpret.words import (
    BRACE_LIST,
    GLOB_CHARS,
    PATHNAME_CHARS,
    Piece,
    assemble_fields,
    brace_expand,
    brace_too_large,
    crlf_tail,
    current_ifs,
    join_pieces,
    pathname_reason,
    unescape_dquote,
    unescape_unquoted,
)
from packlint.interpret.world import World
from packlint.parse import GAP_VARIABLE, RAW_EXPANSION, ParsedScript
from packlint.values import Known, Span, Unknown, Value

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def expand_fields(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[Value]:
    """A word as bash turns it into arguments: expansions, quote removal, word splitting."""
    pieces = word_pieces(interp, node, world, ps, quoted=False)
    if ps.source.crlf:
        crlf_tail(node, ps, pieces)
    return assemble_fields(pieces, ps.source.span(node), current_ifs(world))


def group_pieces(interp: Interpreter, group: list[Node], world: World, ps: ParsedScript) -> list[Piece]:
    """Pieces of a word tree-sitter-bash split in two (`$D/$T.log` -> `$D/$` + `T.log`, or in three
    and more: `$D/$S/$NAME` -> `$D/$` + `S/$NAME`): each trailing `$` and the next part's leading name
    are put back together as `$T`, and the rest of every part is expanded as usual."""
    pieces: list[Piece] = []
    last = len(group) - 1
    for k, node in enumerate(group):
        if k == 0 and last == 0:
            return word_pieces(interp, node, world, ps, quoted=False)
        if node.type == "command_name" and node.named_children:  # (`A=$D/$` + the command `T.log`)
            node = node.named_children[0]
        children = list(node.children) if node.type == "concatenation" else [node]
        if k < last:
            children = children[:-1]  # the bare `$`: glued to the next part's name
        for j, c in enumerate(children):
            if k > 0 and j == 0:
                pieces.extend(_glued_name(interp, c, world, ps))
            else:
                pieces.extend(word_pieces(interp, c, world, ps, quoted=False))
    return pieces


def _glued_name(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[Piece]:
    """The word right after a split-off `$`: its leading name is the parameter (`S/` -> `$S` + `/`)."""
    text = text_of(node)
    span = ps.source.span(node)
    m = re.match(r"[A-Za-z_]\w*|[0-9@*#?$!-]", text) if node.type in ("word", "number") else None
    if m is None:
        return [Piece("$" + unescape_unquoted(text), span=span)]
    pieces = parameters.param(interp, m.group(0), None, world, False, span, ps)
    rest = text[m.end() :]
    if "$" in rest or "`" in rest:
        pieces.append(Piece(None, span=span, reason=f"could not analyse `{text}`"))
    elif rest:
        pieces.append(Piece(unescape_unquoted(rest), span=span))
    return pieces


def expand_group(interp: Interpreter, group: list[Node], world: World, ps: ParsedScript) -> list[Value]:
    if len(group) == 1:
        return expand_fields(interp, group[0], world, ps)
    span = ps.source.span_of_points(group[0].start_point, group[-1].end_point)
    return assemble_fields(group_pieces(interp, group, world, ps), span, current_ifs(world))


def expand_joined(interp: Interpreter, node: Node | None, world: World, ps: ParsedScript) -> Value:
    """A word where no splitting happens (assignment values, `[[ ]]` operands, case subjects)."""
    if node is None:
        return Known("")
    pieces = word_pieces(interp, node, world, ps, quoted=False)
    if ps.source.crlf:
        crlf_tail(node, ps, pieces)
    return join_pieces(pieces, ps.source.span(node))


def expand_pattern(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> str | None:
    """A pattern (`case` arm, `[[ == ]]` right side): quoted parts match literally."""
    out = []
    for p in word_pieces(interp, node, world, ps, quoted=False, pattern=True):
        if p.text is None:
            return None
        out.append(p.text)
    return "".join(out)


def word_pieces(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, quoted: bool, pattern: bool = False
) -> list[Piece]:
    """The pieces of a word node (counted as work, bounded by MAX_NESTING); text past a parse error is unknown."""
    interp.work += 1
    if interp.error_cut is not None and node.end_byte > interp.error_cut:
        return [Piece(None, span=ps.source.span(node), reason="could not analyse this part of the line")]
    interp.depth += 1
    try:
        if interp.depth > MAX_NESTING:
            return [Piece(None, span=ps.source.span(node), reason="nesting too deep to analyse")]
        out = word_pieces_at(interp, node, world, ps, quoted, pattern)
    finally:
        interp.depth -= 1
    # Exact or unknown: a parser placeholder (`$__PLGAP___`, `$__PX3___`) that some grammar path
    # reads as literal text (`${6:-$__PLGAP___}` gives a `word`) is never passed on as a value.
    if not ps.has_placeholders():
        return out
    for i, p in enumerate(out):
        if p.text is not None and "$__P" in p.text and (_GAP_WORD in p.text or _RAW_WORD in p.text):
            out[i] = Piece(
                None,
                p.split,
                p.span,
                "could not analyse this part (bash accepts it; packlint's parser does not)",
                p.boundary,
                p.vanish,
                p.origin,
            )
    return out


_GAP_WORD = "$" + GAP_VARIABLE
_RAW_WORD = "$" + RAW_EXPANSION
assert _GAP_WORD.startswith("$__P") and _RAW_WORD.startswith("$__P")  # the quick test above


def word_pieces_at(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, quoted: bool, pattern: bool
) -> list[Piece]:
    """The pieces of one node of a word, by node type."""
    t = node.type
    if t == "word":  # (the most common node: tested first)
        if ps.source.marks:
            return marked(literal_pieces(node, world, ps.source.span(node), quoted, pattern), node, ps)
        return literal_pieces(node, world, ps.source.span(node), quoted, pattern)
    if t == "command_name":
        return [p for c in node.named_children for p in word_pieces(interp, c, world, ps, quoted, pattern)]
    if t == "concatenation":
        return concatenation_pieces(interp, node, world, ps, quoted, pattern)
    if t in ("string", "translated_string"):
        return string_pieces(interp, node, world, ps, pattern)
    if t == "simple_expansion" or t == "expansion":
        out = parameters.expansion_pieces(interp, node, world, ps, quoted)
        if pattern and quoted:
            return [
                Piece(glob_escape(p.text), p.split, p.span, p.reason, p.boundary, p.vanish) if p.text is not None else p
                for p in out
            ]
        return out
    if t == "command_substitution":
        return [command_substitution(interp, node, world, ps, quoted)]
    span = ps.source.span(node)
    if t in _LITERALS:
        if ps.source.marks:
            return marked(literal_pieces(node, world, span, quoted, pattern), node, ps)
        return literal_pieces(node, world, span, quoted, pattern)
    if t == "raw_string":
        text = text_of(node)[1:-1]
        return [Piece(glob_escape(text) if pattern else text, span=span)]
    if t == "ansi_c_string":
        raw = text_of(node)[2:-1]
        try:
            text = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeDecodeError, UnicodeEncodeError):
            text = raw
        return [Piece(glob_escape(text) if pattern else text, span=span)]
    if t == "process_substitution":
        return [Piece(None, span=span, reason=f"process substitution {snippet(node)}")]
    if t == "arithmetic_expansion":
        v = None
        for c in node.named_children:
            v = arithmetic.arith(interp, c, world, ps)
        if v is None or isinstance(v, Unknown):
            reason = v.reason if isinstance(v, Unknown) else "empty arithmetic"
            return [Piece(None, span=span, reason=f"arithmetic {snippet(node)}: {reason}")]
        return [Piece(str(v), split=not quoted, span=span)]
    if t == "brace_expression":
        return [Piece(None, span=span, reason=f"brace expansion {snippet(node)}")]
    if t in ("file_redirect", "heredoc_redirect", "herestring_redirect", "comment"):
        return []
    text = text_of(node)
    return [Piece(text, span=span)]


def marked(pieces: list[Piece], node: Node, ps: ParsedScript) -> list[Piece]:
    """Literal pieces of code that came from marked values (`eval $cmd`): each keeps the origin of the value
    its text came from (SourceFile.marks), unless it has one."""
    origin = next((o for a, b, o in ps.source.marks if a < node.end_byte and node.start_byte < b), None)
    if origin is not None:
        for p in pieces:
            if p.origin is None and p.text:
                p.origin = origin
    return pieces


# Nodes whose text is the word itself (after tilde expansion, brace expansion and quote removal).
_LITERALS = frozenset(
    {
        "word",
        "number",
        "extglob_pattern",
        "regex",
        "special_variable_name",
        "variable_name",
        "test_operator",
        "string_content",
        "heredoc_content",
    }
)


def literal_pieces(node: Node, world: World, span: Span, quoted: bool, pattern: bool) -> list[Piece]:
    """A literal word: tilde, nullglob globs and brace lists as bash expands them, backslashes removed."""
    text = text_of(node)
    if node.type != "word" or quoted:
        return [Piece(text, span=span)]
    tilde = "~" in text and re.match(r"(?:[A-Za-z_]\w*=)?~(?=/|$)", text)  # `~/x`, and `name=~/x` as bash does
    if tilde:
        home = world.vars.get("HOME")
        home_value = home.scalar() if home is not None else None
        if not isinstance(home_value, Known):
            return [Piece(None, span=span, reason="~ (the home directory at run time)")]
        text = text[: tilde.end() - 1] + home_value.text + text[tilde.end() :]
    if pattern:
        return [Piece(text, span=span)]
    if world.nullglob and GLOB_CHARS.search(text):
        reason = f"glob {text!r} with nullglob: the files it matches at run time"
        return [Piece(None, span=span, split=True, reason=reason)]
    if PATHNAME_CHARS.search(text) and glob_context(node):
        return [Piece(None, span=span, split=True, reason=pathname_reason(text))]
    if "{" in text and ".." in text and BRACE_SEQUENCE.search(text) and brace_context(node):
        # `{0..17000..200}`, `{a..e}`: bash expands a sequence expression into many words; packlint does
        # not (the literal text is no value the program ever sees)
        return [Piece(None, span=span, split=True, reason=f"the brace sequence {text!r} (words bash generates)")]
    if "{" in text and "," in text and BRACE_LIST.search(text) and brace_context(node):
        alternatives = brace_expand(text)
        if alternatives is None:
            return [Piece(None, span=span, split=True, reason=brace_too_large(text))]
        if len(alternatives) > 1:
            return [Piece(unescape_unquoted(a), span=span, boundary=k > 0) for k, a in enumerate(alternatives)]
    return [Piece(unescape_unquoted(text), span=span)]


def glob_context(node: Node) -> bool:
    """Whether bash applies pathname expansion to the word this literal is part of: a command's
    arguments, array items, `for` lists, `[ ]` operands; never an assignment's value, plain or given to
    a declaration command (`X=*.yaml`, `export X=*.yaml` keep the pattern as text). `let`'s expressions
    (`let N=2*3`) are taken as arithmetic: a file named like one is not in any checkout."""
    parent = node.parent
    while parent is not None and parent.type == "concatenation":
        parent = parent.parent
    if parent is not None and parent.type == "command":
        name = parent.child_by_field_name("name")
        return name is None or text_of(name) != "let"
    return parent is None or parent.type != "variable_assignment"


BRACE_SEQUENCE = re.compile(r"(?<![$\\])\{(?:-?\d+\.\.-?\d+|[A-Za-z]\.\.[A-Za-z])(?:\.\.-?\d+)?\}")


def brace_context(node: Node) -> bool:
    """Whether bash brace-expands this whole word: not a part of a larger word (that word is expanded
    as one), not the value of a plain assignment or a command's prefix assignment (bash leaves
    `X={a,b}` as it is; `declare X={a,b}` and array items are expanded)."""
    parent = node.parent
    if parent is None:
        return True
    if parent.type == "concatenation":
        return False
    if parent.type == "variable_assignment":
        grand = parent.parent
        return grand is not None and grand.type == "declaration_command"
    return True


def concatenation_pieces(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, quoted: bool, pattern: bool
) -> list[Piece]:
    """The parts of a word tree-sitter splits (`a$B"c"`), brace-expanded as one word."""
    text = text_of(node)
    # tree-sitter splits `{train,val}.json` into words; bash brace-expands the whole word
    if (
        not quoted
        and not pattern
        and ".." in text
        and all(c.type == "word" for c in node.children)
        and BRACE_SEQUENCE.search(text)
        and brace_context(node)
    ):  # `{0..17000..200}` (a step tree-sitter does not read as a brace expression)
        return [Piece(None, span=ps.source.span(node), split=True, reason=f"the brace sequence {text!r}")]
    if (
        not quoted
        and not pattern
        and "{" in text
        and all(c.type == "word" for c in node.children)
        and BRACE_LIST.search(text)
        and brace_context(node)
    ):
        alternatives = brace_expand(text)
        span = ps.source.span(node)
        if alternatives is None:
            return [Piece(None, span=span, split=True, reason=brace_too_large(text))]
        if len(alternatives) > 1:
            return [Piece(unescape_unquoted(a), span=span, boundary=k > 0) for k, a in enumerate(alternatives)]
    return [
        p for c in node.children if not translated_dollar(c) for p in word_pieces(interp, c, world, ps, quoted, pattern)
    ]


def string_pieces(interp: Interpreter, node: Node, world: World, ps: ParsedScript, pattern: bool) -> list[Piece]:
    """Double quotes: literal gaps between the expansions keep their text (escapes removed)."""
    out: list[Piece] = []
    data = ps.source.data
    kids = node.named_children
    start = node.start_byte + (1 if node.type == "string" else 2)
    end = node.end_byte - 1
    pos = start
    saw_any = False
    at = _Cursor(node)
    for c in kids:
        if c.start_byte > pos:
            if pattern:
                gap = data[pos : c.start_byte].decode("utf-8", "replace")
                out.append(Piece(unescape_dquote(gap), span=ps.source.span(node)))
            else:
                out += _dquote_literal(ps, at, pos, c.start_byte)
        if c.type == "string_content":
            if pattern:
                out.append(Piece(glob_escape(unescape_dquote(text_of(c))), span=ps.source.span(c)))
            else:
                out += _dquote_literal(ps, at, c.start_byte, c.end_byte)
        else:
            # tree-sitter-bash puts the blanks before `${` inside the expansion's first token
            # ("a ${D}" -> `a` + ` ${D}`): inside quotes they are text
            raw = c.text or b""  # None only for a tree parsed without its source
            lead = len(raw) - len(raw.lstrip())
            if lead:
                out.append(
                    Piece(data[c.start_byte : c.start_byte + lead].decode("utf-8", "replace"), span=ps.source.span(c))
                )
            sub = word_pieces(interp, c, world, ps, quoted=True, pattern=pattern)
            out.extend(sub)
        pos = c.end_byte
        saw_any = True
    if end > pos:
        if pattern:
            out.append(Piece(unescape_dquote(data[pos:end].decode("utf-8", "replace")), span=ps.source.span(node)))
        else:
            out += _dquote_literal(ps, at, pos, end)
    if not out and not saw_any:
        out.append(Piece("", span=ps.source.span(node)))
    if not any(p.vanish or p.boundary for p in out):
        # "": an empty quoted string still makes a field
        out.insert(0, Piece("", span=ps.source.span(node)))
    return out


class _Cursor:
    """A (byte offset, row, byte column) position in a node's source, moved forward only (linear in the text)."""

    __slots__ = ("pos", "row", "col")

    def __init__(self, node: Node) -> None:
        self.pos = node.start_byte
        self.row, self.col = node.start_point

    def point(self, data: bytes, to: int) -> tuple[int, int]:
        if to > self.pos:
            chunk = data[self.pos : to]
            nl = chunk.count(b"\n")
            if nl:
                self.row += nl
                self.col = len(chunk) - chunk.rfind(b"\n") - 1
            else:
                self.col += len(chunk)
            self.pos = to
        return self.row, self.col


def _dquote_literal(ps: ParsedScript, at: _Cursor, a: int, b: int) -> list[Piece]:
    """The literal text data[a:b] inside double quotes, escapes removed, as pieces located line by line: a word of a
    string over several lines (`ARGS=" \\<newline> --sequence-parallel \\<newline> ..."`) points at its own line
    (words.assemble_fields locates a field within its piece)."""
    data = ps.source.data
    raw = data[a:b]
    if b"\n" not in raw:
        return [Piece(unescape_dquote(raw.decode("utf-8", "replace")), span=_span_between(ps, at, a, b))]
    out: list[Piece] = []
    line_start = a
    while line_start < b:
        nl = data.find(b"\n", line_start, b)
        line_end = b if nl < 0 else nl
        escaped = nl >= 0 and _escapes_newline(data, line_start, line_end)
        body_end = line_end - 1 if escaped else line_end  # (`\<newline>` is removed in double quotes)
        text = data[line_start:body_end].decode("utf-8", "replace")
        out.append(Piece(unescape_dquote(text), span=_span_between(ps, at, line_start, body_end)))
        if nl >= 0 and not escaped:
            out.append(Piece("\n"))
        line_start = line_end + 1 if nl >= 0 else b
    return out


def _escapes_newline(data: bytes, start: int, end: int) -> bool:
    """Whether the newline at `end` is escaped: an odd run of backslashes right before it."""
    n = 0
    while end - n - 1 >= start and data[end - n - 1] == 0x5C:
        n += 1
    return n % 2 == 1


def _span_between(ps: ParsedScript, at: _Cursor, a: int, b: int) -> Span:
    start = at.point(ps.source.data, a)
    return ps.source.span_of_points(start, at.point(ps.source.data, b))


_SELF_PATH = re.compile(
    r"""^\$\(\s*(?:readlink\s+-[fe]|realpath)\s+"?\$(?:\{?0\}?|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?\s*\)$"""
)


def posix_dirname(text: str) -> str:
    """dirname(1): trailing slashes dropped, then the last component; `.` for a bare name, `/` for the root."""
    if not text:
        return "."
    stripped = text.rstrip("/")
    if not stripped:
        return "/"
    if "/" not in stripped:
        return "."
    head = stripped[: stripped.rindex("/")].rstrip("/")
    return head or "/"


def command_substitution(interp: Interpreter, node: Node, world: World, ps: ParsedScript, quoted: bool) -> Piece:
    """`$( )` is never run: known only for the script's directory and `$(echo ...)`."""
    span = ps.source.span(node)
    text = snippet(node)
    inner = [c for c in node.named_children if c.type != "comment"]
    # $(dirname "$0") / $(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd): the script's directory
    m = SCRIPT_DIR.match(text.replace("\n", " "))
    rel = (m.group("rel") or "").strip("/") if m else ""
    if m and rel and not re.match(r"\$\(\s*cd\s", text):
        m = None  # (`$("$(dirname "$0")/..")` runs a folder: no `cd` before the relative part)
    if m:
        # `$0` is the script run, also inside a file it sources (align-anything's scripts/setup.sh, sourced by
        # scripts/vla/spoc_sft.sh: `$(cd "$(dirname "$0")" && pwd)` is scripts/vla); BASH_SOURCE the file being read
        stack = interp.source_stack
        script = (stack[-1] if "BASH_SOURCE" in text else stack[0]) if stack else None
        if script:
            absolute = "pwd" in text or "readlink" in text or "realpath" in text
            if "readlink" in text or "realpath" in text:
                d = os.path.dirname(os.path.realpath(script))  # (the link resolved, as readlink -f does)
            elif absolute:
                d = os.path.dirname(script)
            elif "BASH_SOURCE" in text:  # the file being read (a sourced one too); `$0` stays the script run
                d = os.path.dirname(parameters.sourcing.display_source(interp, script, world)) or "."
            else:
                d = os.path.dirname(world.script) or "."
            if rel:  # `cd "$(dirname "$0")/.." && pwd`: the folder the cd goes to, as pwd prints it
                d = os.path.normpath(os.path.join(d, rel))
            return Piece(d, split=not quoted, span=span)
    # $(realpath "$0") / $(readlink -f "$0"): the script's own path, the links resolved
    if _SELF_PATH.match(text.replace("\n", " ")):
        stack = interp.source_stack
        script = (stack[-1] if "BASH_SOURCE" in text else stack[0]) if stack else None
        if script:
            return Piece(os.path.realpath(script), split=not quoted, span=span)
    # $(echo words): the words joined by spaces; $(dirname WORD) of a known word: POSIX dirname
    if len(inner) == 1 and inner[0].type == "command":
        cmd = inner[0]
        name = cmd.child_by_field_name("name")
        if name is not None and name.text == b"dirname":
            operands: list[Value] = []
            for i, c in enumerate(cmd.children):
                if cmd.field_name_for_child(i) == "argument":
                    operands.extend(expand_fields(interp, c, world, ps))
            if len(operands) == 1 and isinstance(operands[0], Known) and not operands[0].text.startswith("-"):
                return Piece(posix_dirname(operands[0].text), split=not quoted, span=span)
        if name is not None and name.text == b"echo":
            args: list[Value] = []
            for i, c in enumerate(cmd.children):
                if cmd.field_name_for_child(i) == "argument":
                    args.extend(expand_fields(interp, c, world, ps))
            if args and isinstance(args[0], Known) and args[0].text.startswith("-"):
                return Piece(None, span=span, reason=f"command substitution {text}")
            words = [a.text for a in args if isinstance(a, Known)]
            if len(words) == len(args):
                return Piece(" ".join(words), split=not quoted, span=span)
    return Piece(None, span=span, reason=f"command substitution {text}", split=not quoted)
