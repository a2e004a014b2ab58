"""`[[ ... ]]`, `[ ... ]` and `test`: decided from known values, else unknown (None)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint.interpret import arithmetic, expansion, guards
from packlint.interpret.limits import MAX_NESTING
from packlint.interpret.patterns import glob_match
from packlint.interpret.syntax import name_of, text_of
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.regex_guard import bounded_find
from packlint.values import Known, Unknown, Value, Variable

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def eval_test_node(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> bool | None:
    """`[ ... ]` and `[[ ... ]]`: True/False when known values decide it, else None."""
    inner = [c for c in node.named_children]
    if not inner:
        return False
    guarded = guards.guard_name(interp, node, ps)
    if guarded is not None:  # `[ -z "$X" ] && exit 1`: X comes from the caller (interpret/guards.py)
        guards.assume_caller_set(interp, guarded, world, ps.source.span(node), text_of(node))
    opener = node.children[0].type
    if opener == "[":
        # `[` is a command: its arguments are split and unquoted empties vanish before it reads them
        # (`[ $EMPTY != 32B ]` is `[ != 32B ]`, an error: status 2, the else branch runs)
        words: list[Value] = []
        for c in node.children[1:]:
            if c.type != "]":
                bracket_words(interp, c, world, ps, words)
        return test_args(interp, words)
    return test_expr(interp, inner[0], world, ps, double=opener == "[[")


TEST_TREE = frozenset(
    {"binary_expression", "unary_expression", "parenthesized_expression", "negated_expression", "postfix_expression"}
)


def bracket_words(interp: Interpreter, node: Node, world: World, ps: ParsedScript, out: list[Value]) -> None:
    """The argument words of `[ ... ]` in order: operators as written, operands expanded."""
    if node.type in TEST_TREE:
        for c in node.children:
            bracket_words(interp, c, world, ps, out)
    elif not node.is_named or node.type in ("test_operator", "extglob_pattern", "regex"):
        out.append(Known(text_of(node), ps.source.span(node)))
    elif node.type != "comment":
        out.extend(expansion.expand_fields(interp, node, world, ps))


def test_expr(interp: Interpreter, node: Node, world: World, ps: ParsedScript, double: bool) -> bool | None:
    interp.depth += 1  # `[[ ( ( ... ) ) ]]`, `[[ a && b && ... ]]`
    try:
        if interp.depth > MAX_NESTING:
            return None
        return test_expr_at(interp, node, world, ps, double)
    finally:
        interp.depth -= 1


def test_expr_at(interp: Interpreter, node: Node, world: World, ps: ParsedScript, double: bool) -> bool | None:
    """One `[[ ]]` expression: grouping, `!`, unary and binary tests; a bare word is true when not empty."""
    t = node.type
    if t == "parenthesized_expression":
        kids = node.named_children
        return test_expr(interp, kids[0], world, ps, double) if kids else None
    if t in ("negated_expression",) or (t == "unary_expression" and node.children[0].type == "!"):
        v = test_expr(interp, node.named_children[-1], world, ps, double)
        return None if v is None else not v
    if t == "unary_expression":
        return unary_test(interp, node, world, ps)
    if t == "binary_expression":
        return binary_test(interp, node, world, ps, double)
    word = expansion.expand_joined(interp, node, world, ps)
    return None if not isinstance(word, Known) else word.text != ""


def unary_test(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> bool | None:
    """`-v NAME`, `-z WORD`, `-n WORD`; file tests are unknown (the cluster's file system)."""
    op_node = node.child_by_field_name("operator") or node.children[0]
    op = name_of(op_node)
    operand = node.named_children[-1]
    if op == "-v":
        name = expansion.expand_joined(interp, operand, world, ps)
        if not isinstance(name, Known):
            return None
        var = world.vars.get(name.text)
        if var is None:
            return False
        return None if isinstance(var.scalar(), Unknown) and var.source == "cluster" else True
    word = expansion.expand_joined(interp, operand, world, ps)
    if not isinstance(word, Known):
        # a partly unknown word with literal text is not empty, whatever the unknown part holds
        nonempty = op in ("-z", "-n") and any(text for text, _reason in word.parts)
        return (op == "-n") if nonempty else None
    if op == "-z":
        return word.text == ""
    if op == "-n":
        return word.text != ""
    return None  # file tests: the file system of the cluster is unknown


def binary_test(interp: Interpreter, node: Node, world: World, ps: ParsedScript, double: bool) -> bool | None:
    """`&&`/`||` (three-valued), `==`/`!=` patterns in `[[ ]]`, `=~` (sets BASH_REMATCH), comparisons."""
    op_node = node.child_by_field_name("operator")
    op = name_of(op_node) if op_node is not None else ""
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if op in ("&&", "-a", "||", "-o"):
        assert left is not None and right is not None, "tree-sitter-bash gives `&&` and `||` both operands"
        a = test_expr(interp, left, world, ps, double)
        if op in ("&&", "-a"):
            if a is False:
                return False
            b = test_expr(interp, right, world, ps, double)
            return False if b is False else (None if a is None or b is None else True)
        if a is True:
            return True
        b = test_expr(interp, right, world, ps, double)
        return True if b is True else (None if a is None or b is None else False)
    lv = expansion.expand_joined(interp, left, world, ps) if left is not None else Known("")
    rights = [node.children[i] for i in range(node.child_count) if node.field_name_for_child(i) == "right"]
    if op in ("==", "=", "!=") and double and len(rights) > 1:
        # tree-sitter-bash splits `*"--help"*` into three `right` children: one pattern
        parts = [expansion.expand_pattern(interp, r, world, ps) for r in rights]
        patterns = [p for p in parts if p is not None]
        if not isinstance(lv, Known) or len(patterns) != len(parts):
            return None
        m = glob_match(lv.text, "".join(patterns))
        return m if op != "!=" or m is None else not m
    if op in ("==", "=", "!=") and double and right is not None:
        pat = expansion.expand_pattern(interp, right, world, ps)
        if not isinstance(lv, Known) or pat is None:
            return None
        m = glob_match(lv.text, pat)
        return m if op != "!=" or m is None else not m
    if op == "=~":
        rv = expansion.expand_joined(interp, right, world, ps)
        if not isinstance(lv, Known) or not isinstance(rv, Known):
            return None
        # the script's own regex on a known value: bounded in time (a backtracking engine can take
        # exponential time), undecided past the bound
        decided, found = bounded_find(rv.text, lv.text)
        span = ps.source.span(node)
        if not decided:
            interp.diag(
                "info",
                "analysis-limit",
                "this `=~` test is not decided: its regex (or the value) is over packlint's limits for matching "
                "(a pattern RE2 cannot express whose match ran out of time, or a value over 65,536 characters); "
                "both branches are followed",
                span,
            )
            return None
        items: list[Value | None] = [Known(g or "", span) for g in (found.group(0), *found.groups())] if found else []
        world.vars["BASH_REMATCH"] = Variable(None, items, False, span)
        return found is not None
    rv = expansion.expand_joined(interp, right, world, ps) if right is not None else Known("")
    if not isinstance(lv, Known) or not isinstance(rv, Known):
        return None
    return compare(op, lv.text, rv.text)


def test_args(interp: Interpreter, args: list[Value]) -> bool | None:
    """`test`/`[` with already expanded arguments (POSIX rules by argument count)."""
    if args and isinstance(args[-1], Known) and args[-1].text == "]":
        args = args[:-1]
    words = [a.text for a in args if isinstance(a, Known)]
    if len(words) == len(args):
        return posix_test(words)
    return _test_with_unknown_words(args)


def _test_with_unknown_words(args: list[Value]) -> bool | None:
    """`[ -z ${LAUNCH} ]` with LAUNCH="torchrun --node_rank=$1 ...": a word only partly unknown, with literal text, is
    at least one non-empty word; where the test gives the same status whatever it holds (one word or two, any text
    that is no operator), that is the status (juemifuji/Megatron-LM-AIMO3). None otherwise."""
    outcomes = set()
    for fill in (("x",), ("y1",), ("x", "x")):
        words: list[str] = []
        for a in args:
            if isinstance(a, Known):
                words.append(a.text)
            elif any(text for text, _reason in a.parts):
                words.extend(fill if a.may_split else fill[:1])
            else:
                return None  # (nothing known: it may be empty, or an operator)
        outcomes.add(posix_test(words))
        if len(outcomes) > 1 or None in outcomes:
            return None
    return outcomes.pop()


def compare(op: str, a: str, b: str) -> bool | None:
    """String and integer comparison operators of `test` and `[[ ]]`."""
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        x, y = arithmetic.parse_int(a or "0"), arithmetic.parse_int(b or "0")
        if isinstance(x, Unknown) or isinstance(y, Unknown):
            return None
        return bool(arithmetic.binop(op, x, y))
    return None


def posix_test(words: list[str]) -> bool | None:
    """`test`/`[` by argument count, as POSIX specifies (malformed tests are false: status 2)."""
    n = len(words)
    if n == 0:
        return False
    if n == 1:
        return words[0] != ""
    if words[0] == "!" and n <= 4:
        r = posix_test(words[1:])
        return None if r is None else not r
    if n == 2:
        op, v = words
        if op == "-z":
            return v == ""
        if op == "-n":
            return v != ""
        # a file test (the cluster's file system is unknown), or "unary operator expected": status 2
        return None if re.fullmatch(r"-[a-zA-Z]", op) else False
    if n == 3 and words[1] in ("=", "==", "!=", "<", ">"):
        return compare(words[1], words[0], words[2])
    if n == 3 and words[1] in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        if not all(re.fullmatch(r"\s*[-+]?\d+\s*", w) for w in (words[0], words[2])):
            return False  # "integer expression expected": status 2
        return compare(words[1], words[0].strip(), words[2].strip())
    if n == 3 and words[1] in ("-nt", "-ot", "-ef"):
        return None
    if n == 3 and words[0] == "(" and words[2] == ")":
        return words[1] != ""
    for sep, combine in (("-o", "or"), ("-a", "and")):
        if sep in words[1:-1]:
            k = words.index(sep, 1)
            a, b = posix_test(words[:k]), posix_test(words[k + 1 :])
            if combine == "and":
                return False if (a is False or b is False) else (None if None in (a, b) else True)
            return True if (a is True or b is True) else (None if None in (a, b) else False)
    if "(" in words or ")" in words:
        return None
    return False  # "binary operator expected" / "too many arguments": status 2
