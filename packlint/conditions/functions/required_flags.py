"""The options a program's argparse parser requires (`required=True`) that a launch never gives (PK209).

argparse checks them after it has read the whole command line, before the program runs anything: a launch
without one exits with "the following arguments are required: --x". Judged only where every word the parser
sees is known: the program's own parser read from the checkout, closed (nothing adds options while parsing; a
`parse_known_args` that passes unknown options through still checks what is required), each missing option defined
unconditionally, and the command line holding no word packlint
does not know (a computed word, the script's own arguments). A lone `$NAME` of a variable the script never sets
gives no word, as bash drops it, but the environment the script runs in may set it to the option: the finding
then depends on the machine (an info naming it).
"""

from __future__ import annotations

import re
from typing import Any

from packlint import evidence
from packlint.conditions.functions.codebase_common import _code, _schema_view, _script_text
from packlint.conditions.tree import STR, Builtin, EvalContext, Function, Unk

# the code turns `required` off after defining the option (`action.required = False`, `for a in parser._actions`)
_REQUIRED_EDITED = re.compile(r"\.required\s*=|\brequired\s*=\s*(?!True\b|False\b)[A-Za-z_(\[]")


# an open reason that only says unknown options pass through, at an unconditional parse (argparse_calls)
_KNOWN_ARGS = re.compile(r"parse_known_args at [^ ]+: unknown options are passed through$")


def _given(schema: Any, flags: dict[str, Any]) -> set[int]:
    """ids of the specs the launch's flag words reach (an exact name or, with allow_abbrev, a unique prefix)."""
    out: set[int] = set()
    for name in flags:
        if name.startswith("-"):
            spec = schema.lookup(name)
            if spec is not None:
                out.add(id(spec))
    return out


def _unknown_words(ctx: EvalContext) -> str | None:
    """Why a word of the command line is not known (it may be a required option), or None."""
    if ctx.variant.get("caller_args"):
        return "the launch passes on the script's own arguments, which may give it"
    for word in ctx.variant.get("argv") or ():
        if isinstance(word, dict) and "unknown" in word:
            return f"a word of the command line is unknown ({word['unknown']}) and may be it"
        if isinstance(word, str) and word.startswith("@"):
            return f"{word} may name a file of arguments (fromfile_prefix_chars)"
    return None


def _edited(facts: Any) -> str | None:
    """The program's code changes an option's `required` after defining it (a file of its closure), or None."""
    files = [facts.resolution.file, *facts.files][:64]
    for file in dict.fromkeys(f for f in files if isinstance(f, str)):
        text = _script_text(file)
        m = _REQUIRED_EDITED.search(text)
        if m is not None:
            line = text.count("\n", 0, m.start()) + 1
            return f"the code sets an option's required itself ({file}:{line})"
    return None


def _command_text(ctx: EvalContext) -> str:
    """The script lines the launch is written on."""
    file, line, end = (ctx.launch.get(k) for k in ("file", "line", "end_line"))
    if not isinstance(file, str) or not isinstance(line, int):
        return ""
    lines = _script_text(file).splitlines()
    return "\n".join(lines[line - 1 : end if isinstance(end, int) else line])


def _f_required_missing(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The required options the launch never gives, as argparse lists them ('--read_dir, -w/--write_dir'); ''
    when none."""
    schema, _, snapshot = _schema_view(ctx)
    if schema is None or snapshot is not None or schema.kind != "argparse":
        return Unk("no argparse parser read from the program's code", "absent")
    if not schema.closed and not all(_KNOWN_ARGS.match(r) for r in schema.open_reasons):
        # (a parser read whole that only passes unknown options through, `parse_known_args()` at every parse, still
        # checks what it requires: argparse raises in parse_known_args itself)
        return Unk("the program's parser is not read whole (" + "; ".join(schema.open_reasons[:1]) + ")", "unknown")
    flags = ctx.variant.get("flags") or {}
    given = _given(schema, flags)
    if any(s.action in ("help", "version") for s in schema.specs() if id(s) in given):
        return ""  # argparse prints and exits before it checks what is required
    missing = [s for s in schema.specs() if s.required and s.condition is None and id(s) not in given]
    if not missing:
        return ""
    why = _unknown_words(ctx)
    if why is not None:
        return Unk(why, "unknown")
    facts = _code(ctx)
    edited = _edited(facts) if facts is not None and facts.known else "the program's code is not read"
    if edited is not None:
        return Unk(edited, "unknown")
    # a premise every given option rests on is the whole command line's (`<your_data_path>`, which bash reads as
    # redirections, takes the word after it): an option written in the command but lost rests on it too; one the
    # command never writes is missing whatever the machine holds (EndoDAV's --useage)
    shared = evidence.shared(e for entries in flags.values() if isinstance(entries, list) for e in entries)
    if shared is not None:
        text = _command_text(ctx)
        never = [
            s for s in missing if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text) for o in s.options)
        ]
        if never:
            missing = never
        else:
            evidence.note(ctx, shared)
    vanished = ctx.variant.get("vanished") or []
    if vanished:
        names = ", ".join(f"${n}" for n in vanished[:3])
        evidence.note(ctx, (evidence.MACHINE, f"{names}, which the script never sets, gave no word: it may give it"))
    return ", ".join("/".join(s.options) for s in missing)  # (argparse's own list)


REQUIRED_FLAG_FUNCTIONS = {
    "required_missing": Function(
        (),
        (),
        STR,
        _f_required_missing,
        "the options the program's argparse parser requires (`required=True`) that the launch never gives, "
        "as argparse lists them ('--a, -b/--bb'); '' when none; undecided where a word of the command line is "
        "unknown or the parser is not read whole",
    ),
}
