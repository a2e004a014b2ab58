"""Text helpers of the condition language: `match_group(x, 'regex')`, the first capture group of a regex
search over a value (a number a path spells, `.../pad_seq_to_mult4_sft_.../training_8192.idx.parquet`)."""

from __future__ import annotations

from typing import Any

from packlint.conditions.tree import STR, Builtin, EvalContext, Function, Unk
from packlint.regex import Undecided

MAX_SUBJECT = 4096  # a longer value is undecided (no regex over megabytes of a computed word)


def _compile(args: list[Any]) -> Any:
    import re

    from packlint.conditions.functions.core import _compile_regex

    if re.compile(args[1]).groups < 1:
        raise re.error("match_group needs a pattern with a capture group")
    return _compile_regex(args)


def _f_match_group(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    v = a[0]
    if isinstance(v, Unk):
        return v
    if len(v) > MAX_SUBJECT:
        return Unk(f"the value is longer than {MAX_SUBJECT} characters", "unknown")
    try:
        m = node.static.search(v)
    except Undecided as exc:
        return Unk(str(exc), "unknown")
    if m is None or m.group(1) is None:
        return Unk(f"the value does not match {node.static.pattern!r}", "absent")
    return m.group(1)


TEXT_FUNCTIONS: dict[str, Function] = {
    "match_group": Function(
        (STR, STR),
        (),
        STR,
        _f_match_group,
        "the first capture group of re.search(REGEX, x) (a literal pattern with a group, refused at load when its "
        "matching time can grow exponentially); absent when it does not match; a value over 4,096 characters is "
        "undecided",
        literal=(1,),
        compile_static=_compile,
    ),
}
