"""Small questions asked of tree-sitter-bash nodes: statement lists, snippets, split words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packlint.parse import ParsedScript

if TYPE_CHECKING:
    from tree_sitter import Node


NOISE = {
    "comment",
    "heredoc_body",
    "heredoc_start",
    "heredoc_end",
    "heredoc_content",
    ";",
    ";;",
    "&",
    "then",
    "do",
    "done",
    "fi",
    "else",
    "elif",
    "esac",
    "in",
    "{",
    "}",
    "(",
    ")",
    "\n",
}


def field(node: Node, name: str) -> Node:
    """The child in a field the grammar requires (a subscript's `name`, a binary expression's `left`).
    tree-sitter types every field as optional; error recovery wraps a broken construct in an ERROR
    node instead of leaving a required field out, so None here is a broken invariant, not bad input."""
    child = node.child_by_field_name(name)
    if child is None:
        raise AssertionError(f"tree-sitter-bash gave a {node.type} without its {name!r} field")
    return child


def bytes_of(node: Node) -> bytes:
    """A node's source bytes (tree-sitter types `Node.text` optional: None only for a tree parsed
    without its source, which packlint never does)."""
    return node.text or b""


def is_option(node: Node) -> bool:
    """`-x` / `+x`: a word that sets or clears a `declare`/`export` attribute."""
    return (node.text or b"").startswith((b"-", b"+"))


def text_of(node: Node) -> str:
    """A node's source text (bytes that are not UTF-8 replaced)."""
    return (node.text or b"").decode("utf-8", "replace")


def name_of(node: Node) -> str:
    """A name's source text (strict UTF-8)."""
    return (node.text or b"").decode()


def child_statements(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type not in NOISE]


def inside_error(node: Node, ps: ParsedScript) -> bool:
    return any(a <= node.start_byte and node.end_byte <= b for a, b in ps.error_ranges)


def ends_with_dollar(node: Node | None) -> bool:
    return node is not None and node.type == "concatenation" and node.child_count > 0 and node.children[-1].type == "$"


def glue_chain(value: Node | None, end: int, following: list[Node]) -> list[Node]:
    """The words tree-sitter-bash split off an assignment's value that ends with a bare `$` (`A=$D/$T.log` read as
    `A=$D/$` + command `T.log`), each glued to the one before: a value with more expansions splits more than once
    (`name=x$a-y$b-z$c-w$d-v`: `x$a-y$` + `b-z$c-w$` + `d-v`). `end` is where the assignment ends."""
    chain: list[Node] = []
    last = value
    for n in following:
        inner = n.children[0] if n.type == "command_name" and n.child_count == 1 else n
        if not ends_with_dollar(last) or n.start_byte != end or not (_glues(inner) or inner.type == "word"):
            break
        chain.append(n)
        last, end = inner, n.end_byte
    return chain


def _glues(n: Node) -> bool:
    """A node that can continue a word split after a bare `$`: a word, or a concatenation that starts
    with one (`$P-$M-$D` parses as `$P-$` + `M-$D`: the second part is a concatenation)."""
    if n.type in ("word", "number"):  # `$R/run_$1`: `$R/run_$` + the number `1`
        return True
    return n.type == "concatenation" and n.child_count > 0 and n.children[0].type in ("word", "number")


def translated_dollar(node: Node) -> bool:
    """The `$` of bash's locale-translated string `$"..."`: tree-sitter-bash reads it as a bare `$` right before the
    double-quoted string, which bash expands as the string itself where no message catalog translates it (the
    launch scripts' case: AlibabaResearch/DAMO-ConvAI's `--output_dir $"${CKPT}-${TASK}"` is one word)."""
    if node.type != "$":
        return False
    nxt = node.next_sibling
    if nxt is None or nxt.start_byte != node.end_byte:
        return False
    return nxt.type == "string" or (
        nxt.type == "concatenation" and nxt.child_count > 0 and nxt.children[0].type == "string"
    )


def glued_groups(nodes: list[Node]) -> list[list[Node]]:
    """Group a word that tree-sitter-bash split after a bare `$` with the word right after it (the `$` of a
    translated string `$"..."` dropped: it is the string)."""
    groups: list[list[Node]] = []
    for n in nodes:
        if translated_dollar(n):
            continue
        if groups and ends_with_dollar(groups[-1][-1]) and _glues(n) and n.start_byte == groups[-1][-1].end_byte:
            groups[-1].append(n)
        else:
            groups.append([n])
    return groups


def function_nodes(node: Node) -> list[Node]:
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            out.append(n)
        else:
            stack.extend(n.named_children)
    return out


def runnable(ps: ParsedScript, statements: list[Node]) -> list[Node]:
    """bash reads and runs a script one complete top-level command at a time: with a syntax error at
    line L, the commands that end before L still run, and nothing from L on."""
    lines = [p.span.line - ps.source.line_base for p in ps.problems if p.severity == "error" and p.code == "syntax"]
    if not lines:
        return statements
    stop = min(lines)
    return [s for s in statements if s.end_point[0] + 1 < stop and not s.has_error]


def snippet(node: Node | None, limit: int = 80) -> str:
    """A node's text on one line, cut at `limit` characters (for messages and conditions)."""
    if node is None:
        return ""
    text = " ".join(text_of(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escaped_blanks(data: bytes, start: int, end: int) -> tuple[bool, list[str], bool] | None:
    """The words made of escaped blanks (`\\ `, `\\<tab>`) in the text between two words of a command:
    tree-sitter-bash skips them as space, bash reads each as (part of) a word. Returns (the first one
    touches the word before, the words, the last one touches the word after), or None when there is
    none or the text holds anything but blanks, escaped blanks and line continuations."""
    gap = data[start:end]
    if b"\\" not in gap:
        return None
    words: list[str] = []
    current: str | None = None
    first_glued = False
    i = 0
    while i < len(gap):
        two = gap[i : i + 2]
        if two in (b"\\ ", b"\\\t"):
            if current is None:
                current, first_glued = "", first_glued or (i == 0 and not words)
            current += chr(two[1])
            i += 2
        elif two == b"\\\n" or gap[i : i + 3] == b"\\\r\n":
            i += 2 if two == b"\\\n" else 3  # a line continuation: removed, the word goes on
        elif gap[i : i + 1] in (b" ", b"\t"):
            if current is not None:
                words.append(current)
                current = None
            i += 1
        elif gap[i : i + 1] == b"#" and current is None:
            break  # a comment to the end of the line (`--a 1 \  # note`: the word ` ` ends the command)
        else:
            return None
    last_glued = current is not None
    if current is not None:
        words.append(current)
    return (first_glued, words, last_glued) if words else None
