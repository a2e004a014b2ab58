"""Parameter expansion: `$X`, `${X:-d}`, `${X#p}`, `${A[@]}`, `${#X}` and the parser's raw ones."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint import evidence
from packlint import launchers as L
from packlint.interpret import arithmetic, expansion, fallbacks, guards, sourcing, tree_callers
from packlint.interpret.bash_tables import BASH_DYNAMIC
from packlint.interpret.patterns import TooCostly, glob_escape, remove_affix, replace_pattern
from packlint.interpret.syntax import field, name_of, snippet, text_of
from packlint.interpret.words import (
    Piece,
    cluster_fallback,
    ifs_sep,
    items_pieces,
    join_pieces,
    kept_segs,
    pieces_empty,
    value_pieces,
)
from packlint.interpret.world import World, reassigned
from packlint.parse import GAP_VARIABLE, RAW_EXPANSION, ParsedScript
from packlint.values import Known, Span, Unknown, Value, Variable

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def expansion_pieces(interp: Interpreter, node: Node, world: World, ps: ParsedScript, quoted: bool) -> list[Piece]:
    """`$X` and `${...}`: the pieces a parameter expansion gives."""
    span = ps.source.span(node)
    if node.type == "simple_expansion":
        target = node.named_children[0] if node.named_children else None
        if target is None:
            return [Piece("$", span=span)]
        name = text_of(target)
        if name.startswith(RAW_EXPANSION):
            return raw_expansion(interp, name, world, ps, quoted, span)
        if len(name) > 1 and name[0].isdigit():
            # tree-sitter-bash reads `$1_x`, `$12`, `$1b` as one name; bash reads the one-digit
            # positional parameter and then the rest as text (`${12}` needs the braces)
            return [*param(interp, name[0], None, world, quoted, span), Piece(name[1:], span=span)]
        return param(interp, name, None, world, quoted, span)
    # ${...}
    inner = node.children[1:-1]
    if not inner:
        return [Piece(None, span=span, reason="bad substitution")]
    if inner[0].type == "#" and len(inner) == 2:
        return length_pieces(interp, inner[1], world, quoted, span)
    if inner[0].type == "!":
        return [Piece(None, span=span, reason=f"indirect expansion {snippet(node)}")]
    target = inner[0]
    op_nodes = inner[1:]
    subscript = None
    if target.type == "subscript":
        name = text_of(field(target, "name"))
        subscript = target.child_by_field_name("index")
    else:
        name = text_of(target)
    if not op_nodes:
        return param(interp, name, subscript, world, quoted, span, ps)
    op = op_nodes[0].type
    operands = op_nodes[1:]
    if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
        return default_pieces(interp, node, op, name, subscript, operands, world, ps, quoted)
    if op == ":" and (name in ("@", "*") or (subscript is not None and subscript.text in (b"@", b"*"))):
        return slice_pieces(interp, node, name, subscript, operands, world, ps, quoted)
    return string_operation(interp, node, op, name, subscript, operands, world, ps, quoted)


def note_caller_args(interp: Interpreter, world: World) -> None:
    """`"$@"` of the script itself (not of a function or a script it runs): the launch this statement
    makes passes the caller's arguments on, so its findings hold as shipped (issue 27)."""
    if not world.locals_stack and len(interp.source_stack) <= 1:
        interp.caller_args_hit = True


def length_pieces(interp: Interpreter, target: Node, world: World, quoted: bool, span: Span) -> list[Piece]:
    """`${#X}` (characters), `${#A[@]}` (items), `${#@}` (arguments)."""
    if target.type == "subscript":
        var = world.vars.get(name_of(field(target, "name")))
        idx = target.child_by_field_name("index")
        if idx is not None and idx.text in (b"@", b"*"):
            items: list[Value | None]
            if var is None:
                items = []
            elif var.assoc is not None:
                items = list(var.assoc.values())
            else:
                items = var.items if var.items is not None else [var.value]
            split = next((i for i in items if isinstance(i, Unknown) and i.may_split), None)
            if split is not None:  # `arr=($(cmd))`: as many items as the output has words
                reason = f"the array's length depends on {split.reason}"
                return [Piece(None, span=span, reason=reason, split=not quoted)]
            n = sum(1 for i in items if i is not None)
            return [Piece(str(n), split=not quoted, span=span)]
    name = text_of(target)
    if name in ("@", "*"):
        return [Piece(str(len(world.positional)), split=not quoted, span=span)]
    v = scalar(interp, name, world, span)
    if not isinstance(v, Known):
        return [Piece(None, span=span, reason=v.reason)]
    return [Piece(str(len(v.text)), split=not quoted, span=span)]


def default_pieces(
    interp: Interpreter,
    node: Node,
    op: str,
    name: str,
    subscript: Node | None,
    operands: list[Node],
    world: World,
    ps: ParsedScript,
    quoted: bool,
) -> list[Piece]:
    """`${X:-d}`, `${X-d}`, `${X:=d}`, `${X:+w}`, `${X:?msg}`: decided by whether X is set (and empty)."""
    span = ps.source.span(node)
    is_set, current = param_state(interp, name, subscript, world, quoted, span, ps)
    if is_set is None:
        # unknown whether set/empty: the value is unknown unless both sides agree
        return [Piece(None, span=span, reason=f"{snippet(node)}: unknown whether ${name} is set", split=not quoted)]
    empty = is_set and pieces_empty(current)
    use_default = (not is_set) or (op.startswith(":") and empty)
    if op in (":+", "+"):
        if use_default:
            return []
        return operand_pieces(interp, operands, world, ps, quoted)
    if op in (":?", "?"):
        if use_default and not is_set:
            # `: "${X:?set X}"`: the script stops unless its caller sets X: X is the caller's, unknown
            guards.assume_caller_set(interp, name, world, span, snippet(node))
            return [Piece(None, span=span, reason=f"{snippet(node)}: ${name} is given by the caller")]
        if use_default:
            return [Piece(None, span=span, reason=f"{snippet(node)}: would abort the script")]
        return current
    if not use_default:
        return current
    default = operand_pieces(interp, operands, world, ps, quoted)
    if not is_set and L.CLUSTER_VARIABLE.match(name):
        # `${SLURM_NNODES:-1}`: on the cluster the variable is set; the fallback is a guess
        default = [cluster_fallback(p, name) for p in default]
    elif not is_set and (origin := no_argument(interp, name, world)) is not None:
        # `${2:-default}`: the default holds only when the caller passes no such argument
        default = [assumed_piece(p, origin) for p in default]
    elif not is_set and (why := set_in_tree(interp, name, default)) is not None:
        # issue 26: a script of the checkout runs this one with the variable set (`mpirun -x NNODES=$N`)
        default = [Piece(None, span=span, reason=f"{snippet(node)}: {why}", split=not quoted)]
    elif not is_set and not name.isdigit() and (why := _placeholder(name, default, span)) is not None:
        # `${MODEL:-"Path to your model"}`: the default holds only while the caller leaves MODEL unset
        default = [assumed_piece(p, why) for p in default]
    if op in (":=", "="):
        joined = join_pieces(default, span)
        exported = (world.vars.get(name) or Variable()).exported
        interp.set_var(world, name, Variable(joined, None, exported, span), span)
    return default


def _placeholder(name: str, default: list[Piece], span: Span) -> str | None:
    texts = [p.text for p in default if not p.vanish]
    if any(t is None for t in texts):
        return None
    return fallbacks.placeholder_origin(name, "".join(t for t in texts if t is not None), span.line)


def slice_pieces(
    interp: Interpreter,
    node: Node,
    name: str,
    subscript: Node | None,
    operands: list[Node],
    world: World,
    ps: ParsedScript,
    quoted: bool,
) -> list[Piece]:
    """`${@:2}`, `${A[@]:1:2}`: slices of the argument list / of an array."""
    span = ps.source.span(node)
    nums = [o for o in operands if o.type != ":"]
    off = arithmetic.arith(interp, nums[0], world, ps) if nums else 0
    ln = arithmetic.arith(interp, nums[1], world, ps) if len(nums) > 1 else None
    if isinstance(off, Unknown) or isinstance(ln, Unknown):
        return [Piece(None, span=span, reason=f"{snippet(node)}: unknown offset", split=not quoted)]
    items: list[Value | None]
    if name in ("@", "*"):
        note_caller_args(interp, world)
        items = [Known(world.script), *world.positional]
    else:
        var = world.vars.get(name)
        if var is None:
            items = []
        else:
            items = var.items if var.items is not None else [var.value] if var.value is not None else []
    items = items[off:] if off >= 0 else items[max(len(items) + off, 0) :]
    if ln is not None:
        items = items[:ln]
    star = name == "*" or (subscript is not None and subscript.text == b"*")
    return items_pieces(items, quoted, span, star=star, sep=ifs_sep(world))


def string_operation(
    interp: Interpreter,
    node: Node,
    op: str,
    name: str,
    subscript: Node | None,
    operands: list[Node],
    world: World,
    ps: ParsedScript,
    quoted: bool,
) -> list[Piece]:
    """Operations on the value's text: `${X#p}`, `${X%%p}`, `${X/p/r}`, `${X^^}`, `${X:1:2}`."""
    span = ps.source.span(node)
    value = scalar_sub(interp, name, subscript, world, span, ps)
    if not isinstance(value, Known):
        return [Piece(None, span=span, reason=value.reason, split=not quoted)]
    text = value.text
    operand_node = operands[0] if operands else None
    arg = expansion.expand_pattern(interp, operand_node, world, ps) if operand_node is not None else ""
    if op in ("#", "##", "%", "%%"):
        if arg is None:
            return [Piece(None, span=span, reason=f"{snippet(node)}: unknown pattern", split=not quoted)]
        try:
            kept = remove_affix(text, arg, op)
            return [Piece(kept, split=not quoted, span=value.span or span, segs=kept_segs(value, kept, op))]
        except TooCostly as exc:
            return [Piece(None, span=span, reason=exc.reason, split=not quoted)]
    if op in ("/", "//", "/#", "/%"):
        # operands may be [pattern, '/', replacement]
        repl = ""
        rest = [o for o in operands[1:] if o.type != "/"]
        if rest:
            rv = expansion.expand_joined(interp, rest[0], world, ps)
            if not isinstance(rv, Known):
                return [Piece(None, span=span, reason=rv.reason, split=not quoted)]
            repl = rv.text
        if arg is None:
            return [Piece(None, span=span, reason=f"{snippet(node)}: unknown pattern", split=not quoted)]
        try:
            return [Piece(replace_pattern(text, arg, repl, op), split=not quoted, span=span)]
        except TooCostly as exc:
            return [Piece(None, span=span, reason=exc.reason, split=not quoted)]
    if op in ("^", "^^", ",", ",,"):
        return [Piece(change_case(text, op), split=not quoted, span=span)]
    if op == ":":
        nums = [o for o in operands if o.type != ":"]
        off: int | Unknown
        ln: int | Unknown | None
        if operands and operands[0].type == ":":  # `${X::n}`: the offset is empty (0)
            off = 0
            ln = arithmetic.arith(interp, nums[0], world, ps) if nums else 0
        else:
            off = arithmetic.arith(interp, nums[0], world, ps) if nums else 0
            ln = arithmetic.arith(interp, nums[1], world, ps) if len(nums) > 1 else None
        if isinstance(off, Unknown) or isinstance(ln, Unknown):
            return [Piece(None, span=span, reason=f"{snippet(node)}: unknown offset", split=not quoted)]
        end = None if ln is None else (off + ln if ln >= 0 else ln)
        return [Piece(text[off:end], split=not quoted, span=span)]
    return [Piece(None, span=span, reason=f"unsupported expansion {snippet(node)}", split=not quoted)]


def change_case(text: str, op: str) -> str:
    """`${X^^}`, `${X,,}`, `${X^}`, `${X,}`."""
    if op == "^^":
        return text.upper()
    if op == ",,":
        return text.lower()
    if op == "^":
        return text[:1].upper() + text[1:]
    return text[:1].lower() + text[1:]


# The operators of a raw `${NAME<op>...}`, longest first.
_RAW_OPERATORS = (
    ":-",
    ":=",
    ":+",
    ":?",
    "//",
    "/#",
    "/%",
    "##",
    "%%",
    "^^",
    ",,",
    "-",
    "=",
    "+",
    "?",
    "/",
    "#",
    "%",
    "^",
    ",",
)


def raw_expansion(
    interp: Interpreter, name: str, world: World, ps: ParsedScript, quoted: bool, span: Span
) -> list[Piece]:
    """Evaluate a `${...}` kept as raw text by the parser (quotes or backslashes inside)."""
    m = re.fullmatch(rf"{RAW_EXPANSION}(\d+)_*", name)
    index = int(m.group(1)) if m else -1
    if not 0 <= index < len(ps.raw_expansions):
        return [Piece(None, span=span, reason="could not analyse this expansion", split=not quoted)]
    raw = ps.raw_expansions[index]
    unknown = [Piece(None, span=span, reason=f"could not analyse {raw}", split=not quoted)]
    m = re.match(r"\$\{([A-Za-z_]\w*|\d+)(.*)\}$", raw, re.S)
    if m is None:
        return unknown
    var, rest = m.group(1), m.group(2)
    op = next((o for o in _RAW_OPERATORS if rest.startswith(o)), None)
    if op is None:
        return unknown
    arg = rest[len(op) :]
    if op in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
        is_set, current = param_state(interp, var, None, world, quoted, span, ps)
        # (inside double quotes bash takes the word's single quotes literally: `"${V:-['sam', 'depth']}"`)
        operand = raw_operand(interp, arg, world, span, literal_single=quoted)
        if is_set is None or operand is None:
            return unknown
        use_default = (not is_set) or (op.startswith(":") and pieces_empty(current))
        if op in (":+", "+"):
            return [] if use_default else [Piece(operand[0], split=not quoted, span=span)]
        if not use_default:
            return current
        if op in (":?", "?"):
            if not is_set:  # `: ${X:?"X is not set"}`: the caller sets X (interpret/guards.py)
                guards.assume_caller_set(interp, var, world, span, raw)
            return unknown
        piece = Piece(operand[0], split=not quoted, span=span)
        if not is_set and (origin := no_argument(interp, var, world)) is not None:
            piece = assumed_piece(piece, origin)
        elif not is_set and L.CLUSTER_VARIABLE.match(var):
            piece = cluster_fallback(piece, var)
        elif not is_set and not var.isdigit() and (why := fallbacks.placeholder_origin(var, operand[0], span.line)):
            piece = assumed_piece(piece, why)  # `${MODEL:-"Path to your model"}`: holds on MODEL unset
        if op in (":=", "="):
            given = Known(operand[0], span, piece.origin if piece.origin and not is_set else None)
            interp.set_var(world, var, reassigned(world, var, given, span), span)
        return [piece]
    value = scalar(interp, var, world, span)
    if not isinstance(value, Known):
        return [Piece(None, span=span, reason=value.reason, split=not quoted)]
    text = value.text
    if op in ("^^", ",,", "^", ","):
        return [Piece(change_case(text, op), split=not quoted, span=span)]
    if op in ("#", "##", "%", "%%"):
        pattern = raw_operand(interp, arg, world, span)
        if pattern is None:
            return unknown
        try:
            kept = remove_affix(text, pattern[1], op)
            return [Piece(kept, split=not quoted, span=span, segs=kept_segs(value, kept, op))]
        except TooCostly as exc:
            return [Piece(None, span=span, reason=exc.reason, split=not quoted)]
    pattern_raw, repl_raw = split_unescaped_slash(arg)
    pattern = raw_operand(interp, pattern_raw, world, span)
    repl = raw_operand(interp, repl_raw, world, span) if repl_raw is not None else ("", "")
    if pattern is None or repl is None:
        return unknown
    try:
        return [Piece(replace_pattern(text, pattern[1], repl[0], op), split=not quoted, span=span)]
    except TooCostly as exc:
        return [Piece(None, span=span, reason=exc.reason, split=not quoted)]


def operand_pieces(
    interp: Interpreter, operands: list[Node], world: World, ps: ParsedScript, quoted: bool
) -> list[Piece]:
    """The word of `${X:-word}` / `${X:+word}`: unquoted, its result is split like any expansion
    (`${V:+--precision $V}` gives two words), literal text included."""
    out = []
    if quoted:  # (bash keeps a single-quoted part literally, quotes and all, inside "${X:-'a b'}")
        for o in operands:
            out.extend(_quoted_operand(interp, o, world, ps))
        return out
    for o in operands:
        parts = o.children if (not quoted and o.type == "concatenation") else [o]
        for part in parts:
            pieces = expansion.word_pieces(interp, part, world, ps, quoted=quoted)
            if not quoted and part.type == "word":
                for p in pieces:
                    if p.text is not None:
                        p.split = True
            out.extend(pieces)
    return out


def _quoted_operand(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[Piece]:
    """A word of `${X:-word}` inside double quotes: bash treats its single quotes as ordinary characters
    (`"${V:-['sam', 'depth']}"` is `['sam', 'depth']`: yangzhangok/crystal's VISUAL_MODEL_ID)."""
    if node.type == "raw_string":
        return [Piece(text_of(node), span=ps.source.span(node))]
    if node.type == "concatenation":
        return [p for c in node.children for p in _quoted_operand(interp, c, world, ps)]
    return expansion.word_pieces(interp, node, world, ps, quoted=True)


def param_state(
    interp: Interpreter, name: str, subscript: Node | None, world: World, quoted: bool, span: Span, ps: ParsedScript
) -> tuple[bool | None, list[Piece]]:
    """(is the parameter set?, its pieces)."""
    if name.isdigit():
        n = int(name)
        if n == 0:
            return True, [Piece(world.script, split=not quoted, span=span)]
        if n <= len(world.positional):
            v = world.positional[n - 1]
            return True, value_pieces(v, quoted, span)
        return False, []
    if name in ("@", "*"):
        note_caller_args(interp, world)
        return bool(world.positional), items_pieces(
            world.positional, quoted, span, star=name == "*", sep=ifs_sep(world)
        )
    var = world.vars.get(name)
    if var is None:
        if name in BASH_DYNAMIC or name.startswith(GAP_VARIABLE):
            return None, []
        return False, []
    if var.items is not None and subscript is not None:
        return True, param(interp, name, subscript, world, quoted, span, ps)
    value = var.scalar()
    if value is None:
        return False, []
    return True, value_pieces(value, quoted, span)


def scalar(interp: Interpreter, name: str, world: World, span: Span) -> Value:
    """A parameter's value as one string: special parameters, `$1`, namerefs, unset is empty."""
    if name.startswith(GAP_VARIABLE):
        return Unknown("could not analyse this part (bash accepts it; packlint's parser does not)", span)
    if name.isdigit():
        n = int(name)
        if n == 0:
            return Known(world.script, span)
        if n <= len(world.positional):
            return world.positional[n - 1]
        if no_argument(interp, name, world) is not None:
            # a bare `$3` of a script run with no argument given to packlint: the caller's word (Qwen2.5-Coder's
            # `test.sh MODEL_DIR TP OUTPUT_DIR`), not an empty one: judged empty, its unquoted expansion vanishes
            # and the words after it shift into the wrong flags (`${3:-x}` keeps its default, as shipped)
            return Unknown(f"${name} is the caller's argument (none given to packlint)", span)
        return Known("", span)
    if name == "#":
        return Known(str(len(world.positional)), span)
    if name in ("?", "$", "!", "-", "_"):
        return Unknown(f"${name} is only known at run time", span)
    if name in ("@", "*"):
        return (
            Known(" ".join(p.text if isinstance(p, Known) else "?" for p in world.positional), span)
            if all(isinstance(p, Known) for p in world.positional)
            else Unknown("unknown argument", span)
        )
    if name == "LINENO":
        return Known(str(span.line), span)
    var = world.vars.get(name)
    if var is not None and var.ref is not None:
        var = world.vars.get(var.ref)
    if var is None:
        if name in BASH_DYNAMIC:
            return Unknown(f"${name} is set by bash at run time", span)
        if world.unread_source and not name.isdigit():
            # (haeggee/Megatron-LM modelopt scripts: `source conf/${MLM_MODEL_CFG}.sh` sets MODEL_ARGS)
            return Unknown(f"${name} may be set by the {world.unread_source}", span)
        # empty in a clean environment; the machine's may set it (a path under it is unknown: words.py)
        return Known("", span, UNSET_PREFIX + name)
    v = var.scalar()
    return v if v is not None else Known("", span)


UNSET_PREFIX = "unset:"  # the origin of a variable the script never set (words.py, packlint.evidence)


def no_argument(interp: Interpreter, name: str, world: World) -> str | None:
    """The origin of `$N` taken as missing: the script's own arguments, none given to packlint, are
    empty only on the assumption that the script runs without arguments (None: known empty)."""
    if not name.isdigit() or name == "0" or not world.script_args or interp.args:
        return None
    return evidence.origin_of(evidence.ASSUMED, f"{evidence.NO_ARGUMENTS}, so ${name} is unset")


def set_in_tree(interp: Interpreter, name: str, default: list[Piece]) -> str | None:
    """Why the default of `${name:-d}` is not known: a script of the checkout runs the running one with
    `name` set (packlint.interpret.tree_callers). None: none does; the default stands as shipped."""
    if not name.isidentifier() or not interp.source_stack:
        return None
    texts = [p.text for p in default if not p.vanish]
    literal = "".join(t for t in texts if t is not None) if all(t is not None for t in texts) else None
    return tree_callers.set_by_caller(interp.source_stack, name, literal, interp.tree_memo)


def assumed_piece(p: Piece, origin: str) -> Piece:
    if p.text is not None:
        p.origin = origin
    return p


def scalar_sub(
    interp: Interpreter, name: str, subscript: Node | None, world: World, span: Span, ps: ParsedScript
) -> Value:
    if subscript is None:
        return scalar(interp, name, world, span)
    pieces = param(interp, name, subscript, world, True, span, ps)
    return join_pieces(pieces, span)


def param(
    interp: Interpreter,
    name: str,
    subscript: Node | None,
    world: World,
    quoted: bool,
    span: Span,
    ps: ParsedScript | None = None,
) -> list[Piece]:
    """The pieces of `$NAME`, `${NAME[i]}`, `${A[@]}`, `${C[key]}`, `$@`."""
    if name in ("@", "*"):
        note_caller_args(interp, world)
        return items_pieces(world.positional, quoted, span, star=name == "*", sep=ifs_sep(world))
    if name == "BASH_SOURCE" and subscript is not None:
        script = interp.source_stack[-1] if interp.source_stack else world.script
        return [Piece(sourcing.display_source(interp, script, world), split=not quoted, span=span)]
    if subscript is not None:
        var = world.vars.get(name)
        idx_text = text_of(subscript)
        if var is not None and var.assoc is not None:
            if idx_text in ("@", "*"):
                return items_pieces(list(var.assoc.values()), quoted, span, star=idx_text == "*", sep=ifs_sep(world))
            key = expansion.expand_joined(interp, subscript, world, ps) if ps is not None else Unknown("key")
            if not isinstance(key, Known):
                return [Piece(None, span=span, reason=f"array key {idx_text} is unknown", split=not quoted)]
            found = var.assoc.get(key.text)
            return value_pieces(found, quoted, span) if found is not None else [Piece("", span=span)]
        if idx_text in ("@", "*"):
            if var is None:
                return [Piece("", vanish=True, span=span)] if quoted else []
            items = var.items if var.items is not None else ([var.value] if var.value is not None else [])
            return items_pieces(items, quoted, span, star=idx_text == "*", sep=ifs_sep(world))
        idx = arithmetic.arith(interp, subscript, world, ps) if ps is not None else Unknown("index")
        if isinstance(idx, Unknown):
            return [Piece(None, span=span, reason=f"array index {idx_text} is unknown", split=not quoted)]
        if var is None:
            return [Piece("", span=span)]
        items = var.items if var.items is not None else [var.value]
        split = (
            next((i for i in items[: idx + 1] if isinstance(i, Unknown) and i.may_split), None)
            if idx >= 0
            else next((i for i in items if isinstance(i, Unknown) and i.may_split), None)
        )
        if split is not None:  # items before this index may be any number of words
            return [
                Piece(None, span=span, reason=f"array element {idx_text} depends on {split.reason}", split=not quoted)
            ]
        if idx < 0:
            idx += len(items)
        item = items[idx] if 0 <= idx < len(items) else None
        if item is not None:
            return value_pieces(item, quoted, span)
        return [Piece("", span=span)]
    v = scalar(interp, name, world, span)
    return value_pieces(v, quoted, span)


def raw_operand(
    interp: Interpreter, raw: str, world: World, span: Span, literal_single: bool = False
) -> tuple[str, str] | None:
    """An operand of a raw `${...}`: (its value with quotes removed, the same as a glob pattern in which
    quoted and escaped characters match literally). None when it needs more than plain variables.
    `literal_single`: a `'` is an ordinary character (the word of a `${X:-word}` inside double quotes)."""
    value, pattern = [], []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            value.append(raw[i + 1])
            pattern.append(glob_escape(raw[i + 1]))
            i += 2
        elif c in "'\"" and not (literal_single and c == "'"):
            j = raw.find(c, i + 1)
            if j == -1:
                return None
            inner = raw[i + 1 : j]
            if c == '"' and ("$" in inner or "`" in inner or "\\" in inner):
                return None
            value.append(inner)
            pattern.append(glob_escape(inner))
            i = j + 1
        elif c == "$":
            m = re.match(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))", raw[i:])
            if m is None:
                return None
            v = scalar(interp, m.group(1) or m.group(2), world, span)
            if not isinstance(v, Known):
                return None
            value.append(v.text)
            pattern.append(v.text)
            i += m.end()
        elif c == "`":
            return None
        else:
            value.append(c)
            pattern.append(c)
            i += 1
    return "".join(value), "".join(pattern)


def split_unescaped_slash(raw: str) -> tuple[str, str | None]:
    """`pat/repl` of `${X/pat/repl}`: the first `/` that is not escaped or quoted."""
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            j = raw.find(c, i + 1)
            i = len(raw) if j == -1 else j + 1
            continue
        if c == "/":
            return raw[:i], raw[i + 1 :]
        i += 1
    return raw, None
