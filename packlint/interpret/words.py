"""Word assembly: pieces of an expanded word become fields (IFS splitting) or one joined value."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint import evidence
from packlint.interpret.limits import MAX_ARRAY_ITEMS, MAX_BRACE_CHARS, MAX_BRACE_WORDS, MAX_VALUE_CHARS, MAX_WORDS
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.values import ARGS_ORIGIN, Known, Span, Unknown, Value

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tree_sitter import Node


class Piece:
    """Part of a word being expanded: literal or expanded text, and whether word splitting applies.
    (Hand-written: the hottest object of the interpreter.)"""

    __slots__ = ("text", "split", "span", "reason", "boundary", "vanish", "origin", "segs")

    def __init__(
        self,
        text: str | None,
        split: bool = False,
        span: Span | None = None,
        reason: str = "",
        boundary: bool = False,
        vanish: bool = False,
        origin: str | None = None,
        segs: tuple[tuple[int, int, Span], ...] | None = None,
    ) -> None:
        self.origin = origin  # "caller": text from the script's arguments
        self.segs = segs  # where each part of a joined text was written (values.Known.segs)
        self.text = text  # None: unknown
        self.split = split  # result of an unquoted expansion: subject to word splitting
        self.span = span
        self.reason = reason
        self.boundary = boundary  # "${A[@]}": a field boundary before this piece
        self.vanish = vanish  # "${A[@]}" of an empty array / "$@" with no args

    def __repr__(self) -> str:
        return f"Piece({self.text!r}, split={self.split}, reason={self.reason!r})"


GLOB_CHARS = re.compile(r"(?<!\\)[*?]|(?<!\\)\[[^]]+\]")
# the characters that make a word a pattern bash matches against file names (pathname expansion) in
# practice: `configs/*.yaml`, `shard_??.json`. A bracket expression alone (`[0,1]`, Hydra's list syntax)
# is kept as text: it matches only a file named by one of its characters, which a checkout does not hold
PATHNAME_CHARS = re.compile(r"(?<!\\)[*?]")


def pathname_reason(text: str) -> str:
    """The reason of a word bash expands against the file system when the script runs."""
    return f"the files {text!r} matches when the script runs (pathname expansion; the pattern itself if none)"


BRACE_LIST = re.compile(r"(?<![$\\])\{[^{}\s]*,[^{}\s]*\}")


def brace_expand(text: str) -> list[str] | None:
    """`{train,val}.json` -> train.json val.json (comma lists, left to right, innermost first).

    Bounded by construction (audit H14): the number of words is predicted before anything is built
    (the product of the lists' lengths), and the building itself stops past MAX_BRACE_WORDS words or
    MAX_BRACE_CHARS characters of work (nested lists can multiply further than the prediction sees).
    None: too large to track (the caller makes the word unknown, with brace_too_large's reason)."""
    m = BRACE_LIST.search(text)
    if m is None:
        return [text]
    if brace_prediction(text) > MAX_BRACE_WORDS:
        return None
    out: list[str] = []
    todo = [text]  # a stack: depth first, left to right, as the recursive definition
    cost = 0
    while todo:
        t = todo.pop()
        cost += len(t)
        if cost > MAX_BRACE_CHARS:
            return None
        m = BRACE_LIST.search(t)
        if m is None:
            out.append(t)
            continue
        head, tail = t[: m.start()], t[m.end() :]
        todo.extend(head + alt + tail for alt in reversed(m.group(0)[1:-1].split(",")))
        if len(out) + len(todo) > MAX_BRACE_WORDS:
            return None
    return out


def brace_prediction(text: str, stop: int = MAX_BRACE_WORDS) -> int:
    """The number of words the comma lists of `text` give (exact without nesting; a lower bound with
    it), counted until it passes `stop` (a 127-byte word can predict 2**40 words)."""
    n = 1
    for m in BRACE_LIST.finditer(text):
        n *= m.group(0).count(",") + 1
        if n > stop:
            break
    return n


_FAR = 10**15


def brace_too_large(text: str) -> str:
    """The reason a brace expansion too large to track gives."""
    n = brace_prediction(text, _FAR)
    if n > _FAR:
        size = f"more than {_FAR:,} words"
    elif n > MAX_BRACE_WORDS:
        size = f"{n:,} words"
    else:  # nested lists, or long words: the building stopped
        size = f"more than {MAX_BRACE_WORDS:,} words or {MAX_BRACE_CHARS:,} characters"
    return f"brace expansion into {size}: too large to track (limit {MAX_BRACE_WORDS:,} words)"


def crlf_tail(node: Node, ps: ParsedScript, pieces: list[Piece]) -> None:
    """A word that ends right before a CR gets the CR, as in bash (tree-sitter skips it as a blank)."""
    if ps.source.data[node.end_byte : node.end_byte + 1] == b"\r":
        pieces.append(Piece("\r", span=ps.source.span(node)))


def value_pieces(v: Value, quoted: bool, span: Span) -> list[Piece]:
    """A value as pieces; a partly unknown value keeps its known parts, so word splitting and
    `bash -c "$X ..."` still see them."""
    if isinstance(v, Unknown) and v.parts:
        return [part_piece(t, r or "", quoted, v.span or span) for t, r in v.parts] or [_value_piece(v, quoted, span)]
    return [_value_piece(v, quoted, span)]


def _value_piece(v: Value, quoted: bool, span: Span) -> Piece:
    if isinstance(v, Known):
        return Piece(v.text, split=not quoted, span=v.span or span, origin=v.origin, segs=v.segs)
    return Piece(None, split=not quoted, span=v.span or span, reason=v.reason)


def items_pieces(
    items: Sequence[Value | None], quoted: bool, span: Span, star: bool = False, sep: str = " "
) -> list[Piece]:
    """ "${A[@]}" -> one field per item; "${A[*]}" -> items joined by the first character of IFS;
    unquoted -> split. Holes of a sparse array (None) are skipped."""
    present = [i for i in items if i is not None]
    if quoted and star:
        texts = [i.text for i in present if isinstance(i, Known)]
        if len(texts) != len(present):
            reason = next(i.reason for i in present if isinstance(i, Unknown))
            return [Piece(None, span=span, reason=reason)]
        if sum(len(t) for t in texts) + len(sep) * len(texts) > MAX_VALUE_CHARS:
            return [Piece(None, span=span, reason="value too long to track")]
        return [Piece(sep.join(texts), span=span)]
    if not present:
        return [Piece("", vanish=True, span=span)] if quoted else []
    out: list[Piece] = []
    for n, item in enumerate(present):
        pieces = value_pieces(item, quoted, span)
        pieces[0].boundary = n > 0
        out.extend(pieces)
    return out


def pieces_empty(pieces: list[Piece]) -> bool:
    return all(p.text == "" for p in pieces)


_IFS = re.compile(r"[ \t\n]+")


def _sub_span(span: Span | None, text: str, start: int, end: int) -> Span | None:
    """The span of text[start:end] when `span` covers exactly `text` on one line (a literal without
    escapes), so a flag found inside a string (`GPT_ARGS="--micro-batch-size=2 ..."`) points at itself."""
    if span is None or span.line != span.end_line or span.end_column - span.column != len(text):
        return None
    return Span(span.file, span.line, span.column + start, span.line, span.column + end)


def ifs_sep(world: World) -> str:
    ifs = current_ifs(world)
    return " " if ifs is None else ifs[:1]


def current_ifs(world: World) -> str | None:
    """The IFS in effect when known and not the default (None: split on blanks)."""
    var = world.vars.get("IFS")
    if var is None:
        return None
    v = var.scalar()
    if not isinstance(v, Known) or v.text == " \t\n":
        return None
    return v.text


def _ifs_splitter(ifs: str | None) -> re.Pattern[str] | None:
    """The regex bash's word splitting uses for this IFS (None: the default blank characters)."""
    if ifs is None:
        return _IFS
    blanks = "".join(c for c in ifs if c in " \t\n")
    others = "".join(c for c in ifs if c not in " \t\n")
    parts = []
    if others:
        parts.append(
            f"[{re.escape(blanks)}]*[{re.escape(others)}][{re.escape(blanks)}]*" if blanks else f"[{re.escape(others)}]"
        )
    if blanks:
        parts.append(f"[{re.escape(blanks)}]+")
    return re.compile("|".join(parts)) if parts else None


def assemble_fields(pieces: list[Piece], word_span: Span, ifs: str | None = None) -> list[Value]:
    """Pieces -> fields, with word splitting of unquoted expansion results (on IFS)."""
    if len(pieces) == 1:  # one piece that is not split: the general loop's result, without it
        one = pieces[0]
        if one.vanish:
            return []
        if one.text is None or not one.split:
            return [_field_value(pieces, word_span)]
    splitter = _ifs_splitter(ifs) if ifs is not None else _IFS
    fields: list[Value] = []
    cur: list[Piece] = []
    started = False

    def finish() -> None:
        nonlocal cur, started
        if started:
            fields.append(_field_value(cur, word_span))
        cur, started = [], False

    for p in pieces:
        if p.boundary:
            finish()
        if p.vanish:
            continue
        if p.text is None:
            cur.append(p)
            started = True
            continue
        if p.split:
            if splitter is not None and len(p.text) > 2 * MAX_WORDS and _many_words(splitter, p.text):
                # (counted before anything is built: a 1 MiB value of `a a a ...` is 512 Ki words)
                reason = f"a value that splits into more than {MAX_WORDS:,} words: more than packlint tracks"
                cur.append(Piece(None, split=True, span=p.span, reason=reason))
                started = True
                continue
            parts = splitter.split(p.text) if splitter is not None else [p.text]
            if len(parts) == 1:
                if p.text and PATHNAME_CHARS.search(p.text):  # (an unquoted expansion is a pattern too)
                    cur.append(Piece(None, split=True, span=p.span, reason=pathname_reason(p.text)))
                    started = True
                elif p.text:
                    cur.append(p)
                    started = True
                elif _kept_origin(p.origin):
                    cur.append(p)  # (empty, no field of its own; what it stands on goes with the word)
                continue
            offset = 0
            for k, part in enumerate(parts):
                if k > 0:
                    finish()
                start = p.text.find(part, offset) if part else offset
                offset = start + len(part)
                if part and PATHNAME_CHARS.search(part):
                    cur.append(Piece(None, split=True, span=p.span, reason=pathname_reason(part)))
                    started = True
                elif part:
                    origin = _part_origin(p.origin, start, offset)
                    cur.append(Piece(part, span=_split_span(p, start, offset), origin=origin))
                    started = True
            continue
        cur.append(p)
        started = True
    finish()
    return fields


def _split_span(p: Piece, start: int, end: int) -> Span | None:
    """The span of the field p.text[start:end]: the part of a joined text it was written in (Piece.segs), and
    within a one-line literal the field itself."""
    assert p.text is not None
    if p.segs:
        for a, b, seg in p.segs:
            if a <= start < b:
                return _sub_span(seg, p.text[a:b], start - a, end - a) or seg
    return _sub_span(p.span, p.text, start, end) or p.span


def _segs(parts: list[Piece]) -> tuple[tuple[int, int, Span], ...] | None:
    """The segments of a text joined from `parts` (values.Known.segs): None when one place wrote it all, or
    when there are more than MAX_SEGS (a long loop of appends: the word's own span then)."""
    out: list[tuple[int, int, Span]] = []
    at = 0
    for p in parts:
        text = p.text or ""
        if p.segs:
            out += [(at + a, at + b, s) for a, b, s in p.segs]
        elif text and p.span is not None:
            out.append((at, at + len(text), p.span))
        at += len(text)
    if len(out) < 2 or len(out) > MAX_SEGS or len({s for _a, _b, s in out}) < 2:
        return None
    return tuple(out)


MAX_SEGS = 64


def kept_segs(value: Known, kept: str, op: str) -> tuple[tuple[int, int, Span], ...] | None:
    """The segments of what `${X#p}` / `${X%p}` keeps of a joined value (`TRAIN_ARGS="${TRAIN_CMD#python -m x}"`):
    each part still points where it was written."""
    if not value.segs:
        return None
    cut = len(value.text) - len(kept) if op in ("#", "##") else 0
    n = len(kept)
    out = [(max(a - cut, 0), min(b - cut, n), s) for a, b, s in value.segs if b - cut > 0 and a - cut < n]
    return tuple(out) if len(out) > 1 else None


def _many_words(splitter: re.Pattern[str], text: str) -> bool:
    return any(n >= MAX_WORDS for n, _ in enumerate(splitter.finditer(text)))


def _field_value(parts: list[Piece], word_span: Span) -> Value:
    if len(parts) == 1 and parts[0].text is not None:  # one known piece: most fields (same result)
        one = parts[0]
        text = one.text
        assert text is not None
        if len(text) > MAX_VALUE_CHARS:
            return Unknown("value too long to track", word_span)
        if not text:
            return Known(text, word_span, one.origin if _kept_origin(one.origin) else None)
        return Known(text, one.span if one.span is not None else word_span, one.origin, one.segs)
    texts = [p.text for p in parts if p.text is not None]
    if len(texts) != len(parts):
        unknown = next(p for p in parts if p.text is None)
        known_tail = ""
        for p in reversed(parts):
            if p.text is None:
                break
            known_tail = p.text + known_tail
        reason = unknown.reason
        if known_tail.startswith("/") and len(parts) > 1:
            reason = f"partly unknown: {unknown.reason}; tail={known_tail.lstrip('/')}"
        return Unknown(
            reason,
            word_span,
            tuple(_part_of_unknown(p) for p in parts),
            any(p.text is None and p.split for p in parts),
        )
    if sum(len(t) for t in texts) > MAX_VALUE_CHARS:  # predicted before joining (`$X$X$X...`)
        return Unknown("value too long to track", word_span)
    under_unset = _path_under_unset(parts, word_span)
    if under_unset is not None:
        return under_unset
    text = "".join(texts)
    nonempty = [p for p in parts if p.text]
    span = nonempty[0].span if len(nonempty) == 1 and nonempty[0].span is not None else word_span
    origins = {p.origin for p in nonempty}
    origin = origins.pop() if len(origins) == 1 else None  # "caller", or "cluster-default:NAME"
    if origin != "caller" and not _kept_origin(origin):
        # an assumption made on an empty part (`d/sp/$NAME` with NAME=$2) holds for the word; one made on a part
        # with text holds for that part (a marked value: split again, each field keeps its own part's)
        empty = [p.origin for p in parts if not p.text and p.origin and _kept_origin(p.origin)]
        origin = _marked(nonempty, len(text), empty) or (empty[0] if empty else origin)
    return Known(text, span, origin, _segs(nonempty) if len(nonempty) > 1 else nonempty[0].segs if nonempty else None)


def _marked(parts: list[Piece], length: int = 0, whole: list[str] | tuple[str, ...] = ()) -> str | None:
    """The origin of a value joined from parts of which some rest on something (a cluster variable's fallback, an
    assumption), each part's own (`DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes $NNODES"`, NNODES=${WORLD_SIZE:-1}:
    split later, `1` stays the cluster's and `8` the script's); None when no part with text has one.
    `whole`: the origins of empty parts (`--node_rank $NODE_RANK`, never set): they hold for every field."""
    ranges: list[tuple[int, int, str]] = []
    at = 0
    for p in parts:
        text = p.text or ""
        if p.origin and carried(p.origin):
            ranges += evidence.part_marks(p.origin, at, len(text))
        at += len(text)
    if not ranges:
        return None
    ranges += [(0, length, o) for o in dict.fromkeys(whole)]  # (an empty part's holds for the whole word)
    if len(ranges) == 1 and ranges[0][:2] == (0, length) and length:
        return ranges[0][2]  # (one mark over the whole text is that origin: `X="$2"`, a followed caller's word)
    return evidence.marked(ranges)


def _part_origin(origin: str | None, start: int, end: int) -> str | None:
    """The origin of the field [start, end) split out of a value with this origin."""
    if not origin or not origin.startswith(evidence.MARKS):
        return origin
    return evidence.weakest(str(o) for a, b, o in evidence.marks(origin) if a < end and start < b)


# (a known part of a partly unknown value keeps its origin in its reason slot: `training_args="... --percentage
# $percentage ... --output_dir $OUT"` with OUT unknown, eval'd later: princeton-nlp/LESS's derivatives)
ORIGIN_NOTE = "\0origin:"


def _part_of_unknown(p: Piece) -> tuple[str | None, str]:
    """A piece as a part of a partly unknown value: (text, reason), a known part's origin in its reason slot."""
    if p.text is not None and p.origin and carried(p.origin):
        return p.text, ORIGIN_NOTE + p.origin
    return p.text, p.reason


def carried(origin: str) -> bool:
    """An origin a part keeps when joined into a larger value: what it rests on (evidence: an assumption, the
    machine, a cluster variable's fallback, a marked value) or a followed caller's word (`percentage=$3`)."""
    return origin == ARGS_ORIGIN or origin.startswith(("cluster-default:", evidence.MARKS)) or _kept_origin(origin)


def part_piece(text: str | None, reason: str, quoted: bool, span: Span) -> Piece:
    """A part of a partly unknown value as a piece, with the origin its reason slot keeps."""
    if text is not None and reason.startswith(ORIGIN_NOTE):
        return Piece(text, split=not quoted, span=span, origin=reason[len(ORIGIN_NOTE) :])
    return Piece(text, split=not quoted, span=span, reason=reason)


def _kept_origin(origin: str | None) -> bool:
    """An origin that says how a value is known (packlint.evidence: "assumed:...", "machine:..."), or
    that it comes from a variable the script never sets ("unset:NAME"), kept through assignments."""
    return bool(origin) and origin.startswith(("assumed:", "machine:", "unset:"))  # type: ignore[union-attr]


def _path_under_unset(parts: list[Piece], word_span: Span) -> Unknown | None:
    """`$SCRATCH/configs/x.yaml` with $SCRATCH never set by the script: the path is the machine's
    (a cluster's scratch or work directory), so unknown, never `/configs/x.yaml`. Its known tail is
    kept (`tail=configs/x.yaml`), as for any partly unknown path."""
    for i, p in enumerate(parts):
        if p.text != "" or not p.origin or not p.origin.startswith("unset:"):
            continue
        rest = "".join(q.text or "" for q in parts[i + 1 :])
        if not rest.startswith("/"):
            continue
        name = p.origin[len("unset:") :]
        reason = f"${name} is never set by the script (the machine's or the cluster's variable)"
        tail = rest.lstrip("/")
        pieces = tuple((None, reason) if q is p else _part_of_unknown(q) for q in parts)
        return Unknown(f"partly unknown: {reason}; tail={tail}", word_span, pieces)
    return None


def capped_words(fields: list[Value], span: Span) -> list[Value]:
    """A command line of at most MAX_WORDS words: past that, one unknown word that may be any number."""
    if len(fields) <= MAX_WORDS:
        return fields
    reason = f"{len(fields):,} words or more: more than packlint tracks ({MAX_WORDS:,})"
    return [*fields[:MAX_WORDS], Unknown(reason, span, may_split=True)]


def capped_items(items: list[Value | None], span: Span) -> list[Value | None]:
    """An array of at most MAX_ARRAY_ITEMS items: past that, one unknown item that may be any number
    of words (and stays so through further appends, at no cost)."""
    if len(items) <= MAX_ARRAY_ITEMS:
        return items
    return [Unknown(ARRAY_TOO_LARGE, span, may_split=True)]


ARRAY_TOO_LARGE = f"an array of more than {MAX_ARRAY_ITEMS:,} items: too large to track"


def array_too_large(items: list[Value | None] | None) -> bool:
    """An array capped by capped_items."""
    if items is None or len(items) != 1:
        return False
    one = items[0]
    return isinstance(one, Unknown) and one.reason == ARRAY_TOO_LARGE


def cluster_fallback(p: Piece, name: str) -> Piece:
    """A default taken because a cluster variable is unset here (it is set on the cluster)."""
    if p.text is not None:
        p.origin = f"cluster-default:{name}"
    return p


def join_pieces(pieces: list[Piece], word_span: Span) -> Value:
    """Pieces -> one value, no splitting; array items are joined by a space as in assignments."""
    out: list[Piece] = []
    for p in pieces:
        if p.vanish:
            continue
        if p.boundary:
            out.append(Piece(" ", span=p.span))
        # a cluster fallback stays one through assignments (NNODES=${SLURM_NNODES:-1}); so does a word a caller the
        # analysis followed passed in (`percentage=$3`: the caller's per-run value, princeton-nlp/LESS); the script's
        # own arguments' origin does not (it marks words the caller passes straight through "$@")
        keep = p.origin if p.origin and carried(p.origin) else None
        out.append(Piece(p.text, span=p.span, reason=p.reason, origin=keep, segs=p.segs))
    if not out:
        return Known("", word_span)
    return _field_value(out, word_span)


def concat_values(a: Value, b: Value, span: Span) -> Value:
    if isinstance(a, Unknown):
        return Unknown(a.reason, span)
    if isinstance(b, Unknown):
        return Unknown(b.reason, span)
    if len(a.text) + len(b.text) > MAX_VALUE_CHARS:  # `X+=$X` doubles
        return Unknown("value too long to track", span)
    # (each part keeps what it rests on: `CMD+=" --fp16"` after CMD="... --micro-batch-size $MBS", MBS=${9:-4})
    origin = a.origin if a.origin == b.origin or not b.text else b.origin if not a.text else None
    if origin is None and (a.origin or b.origin):
        origin = _marked([Piece(a.text, origin=a.origin), Piece(b.text, origin=b.origin)])
    if a.text and b.text:
        segs = _segs([_value_piece(a, True, span), _value_piece(b, True, span)])
    else:
        segs = a.segs if a.text else b.segs
    return Known(a.text + b.text, span if a.text else b.span, origin, segs)


def unescape_unquoted(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def unescape_dquote(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)
