"""How argparse reads the values written after one occurrence of a flag (the PK202 check, and what PK103
compares): the words it takes, whether their count and types pass, and where packlint cannot tell (an
expansion that is empty here, a word it does not know, the parser's positionals). Pure functions of a flag's
spec and its FLAG_ENTRY; the script's text is read through codebase_common."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packlint.caches import memo
from packlint.conditions.functions.codebase_common import _script_text
from packlint.conditions.functions.core import python_int
from packlint.conditions.tree import Unk

if TYPE_CHECKING:
    from packlint.model_types import FlagEntryJSON

# transformers.hf_argparser.string_to_bool (transformers 5.24, hf_argparser.py:36): case-insensitive
_HF_BOOL_WORDS = frozenset(("yes", "true", "t", "y", "1", "no", "false", "f", "n", "0"))


def _value_words(occ: FlagEntryJSON) -> list[Any] | None:
    """The words argparse receives as the occurrence's value (None: none, the flag stands alone);
    an item that is a dict is a word packlint does not know."""
    v = occ.get("value")
    if v is True or v is None:
        return None
    if isinstance(v, list):
        return v
    return [v]


def _type_problem(spec: Any, word: str) -> str | None:
    """What argparse says about one value word, or None when it accepts it."""
    if word == "":
        # an empty word is almost always an unset variable the caller is meant to set: not judged
        return None
    t = spec.type or "str"
    if t == "custom:string_to_bool" and _hf_field(spec) and word.lower() not in _HF_BOOL_WORDS:
        return (
            f"{word!r} is not a truth value: HfArgumentParser's string_to_bool raises 'Truthy value expected' "
            "(it takes yes/no, true/false, t/f, y/n, 1/0)"
        )
    if t == "int" and python_int(word) is None:
        return f'{word!r} is not an integer: argparse exits with "invalid int value: {word!r}"'
    if t == "float":
        try:
            float(word)
        except ValueError:
            return f'{word!r} is not a number: argparse exits with "invalid float value: {word!r}"'
    if spec.choices and t in ("str", "int", "float"):
        # (an empty tuple is a list computed at run time that read as empty: open. argparse converts the word with
        # `type` before it looks it up in the choices: with another type, `type=lambda x: x.lower() == 'true',
        # choices=[True, False]` (HKUSTDial/EllieSQL), the converted value is not known here)
        text = word
        if t == "int" and python_int(word) is not None:
            text = str(python_int(word))
        elif t == "float":
            try:
                text = str(float(word))
            except ValueError:
                pass
        if text not in spec.choices and word not in spec.choices:
            return (
                f"{word!r} is not one of its choices ({', '.join(spec.choices)}): argparse exits with "
                f'"invalid choice: {word!r}"'
            )
    return None


def _flag_problem(spec: Any, occ: FlagEntryJSON, name: str, files: tuple[str, ...] = (), room: int = 0) -> Any:
    """What is wrong with one occurrence of a flag, as argparse parses it; `room`: how many words the
    parser's positional arguments take (0: none; -1: any number, `nargs='*'` or REMAINDER): words
    after the flag's value that they can take are theirs, not the flag's (packlint.codebase.model)."""
    words = _value_words(occ)
    if "unknown" in occ:
        return None
    if name not in spec.options and name[1:2] != "-" and name[:2] in spec.options:
        return None  # `-vIGV`: the value is attached (FlagSchema.lookup); what follows is not judged here
    if not spec.takes_value:
        if words is None:
            return None
        if any(isinstance(w, dict) for w in words):
            return Unk("the words after it are not known", "unknown")
        if room < 0 or len(words) <= room:
            return Unk(_positional_reason(room), "unknown")
        shown = " ".join(words)
        return f"takes no value ({spec.action}), but is followed by {shown!r}: {_left_over(spec, words)}"
    nargs = spec.nargs
    if words is None and _followed_by_placeholder(occ, name, files):
        # `--wandb_project <your-wandb-project-name> \`: bash reads the placeholder as redirections (an input
        # file, then an output to the next word), so the command is a template that does not run as written
        return Unk(f"the value after {name} is a template placeholder (<...>) bash reads as a redirection", "unknown")
    if words is None and _followed_by_expansion(occ, name, files):
        # `--flag $X` with X empty here (often a positional parameter the caller gives): bash drops the
        # word, but packlint cannot tell an intended caller value from a missing one
        return Unk(f"the value after {name} is an expansion that is empty here", "unknown")
    if words is None:
        if nargs in (None, "+") or (isinstance(nargs, int) and nargs > 0):
            return (
                "needs a value but none follows it: argparse exits with 'expected one argument'"
                if nargs is None
                else "needs at least one value but none follows it"
            )
        return None
    dropped = _value_after_empty_expansion(occ, name)
    if dropped is not None:
        return dropped
    joined = " ".join(w for w in words if isinstance(w, str))
    if "$__PLGAP" in joined:  # a region the parser could not read (packlint.parse.GAP_VARIABLE): unknown
        return Unk("the value comes from a part of the script packlint could not parse", "unknown")
    if "<" in joined and ">" in joined.split("<", 1)[1]:
        return Unk("the value is a template placeholder (<...>)", "unknown")
    if any(isinstance(w, dict) for w in words):
        known_count = len(words)
        if nargs is None and known_count > 1:
            return Unk("some of the words after it are not known", "unknown")
        return None
    extra = len(words) - (nargs if isinstance(nargs, int) and not isinstance(nargs, bool) else 1)
    if (nargs is None or isinstance(nargs, int)) and extra > 0 and (room < 0 or extra <= room):
        return Unk(_positional_reason(room), "unknown")
    if nargs is None and len(words) > 1:
        return (
            f"takes one value but is given {len(words)} words ({' '.join(words)!r}), often an unquoted "
            f"variable: it takes {words[0]!r}, and {_left_over(spec, words[1:])}"
        )
    if nargs == "?" and len(words) > 1:
        return _optional_value_problem(spec, words, room)
    if isinstance(nargs, int) and not isinstance(nargs, bool) and len(words) != nargs:
        if len(words) < nargs and occ.get("then_unknown"):
            # `--wave a "$STATE/x" b`: the word after its values is one packlint does not know; bash may well
            # give it (and the words after it) to the flag
            why = occ["then_unknown"]
            return Unk(f"the word after its values is not known ({why}): it may be one of them", "unknown")
        return f"takes exactly {nargs} values but is given {len(words)} ({' '.join(words)!r})"
    for w in words:
        bad = _type_problem(spec, w)
        if bad is not None:
            return bad
    return None


def _optional_value_problem(spec: Any, words: list[str], room: int) -> Any:
    """An optional value (`nargs='?'`, HfArgumentParser's bools) takes one word at most: argparse gives it the first,
    and the rest are left over (antoniocap2023/Video-LLaVA_Minecraft: `--bf16 True \\ ` + newline)."""
    if room < 0 or len(words) - 1 <= room:
        return Unk(_positional_reason(room), "unknown")
    bad = _type_problem(spec, words[0])
    if bad is not None:
        return bad
    given = f"{len(words)} words ({' '.join(words)!r})"
    return f"takes at most one value but is given {given}: it takes {words[0]!r}, and {_left_over(spec, words[1:])}"


def _left_over(spec: Any, rest: list[str]) -> str:
    """How the parser stops on words no option takes: HfArgumentParser's ValueError for a dataclass field's flag
    (hf_argparser.py parse_args_into_dataclasses), argparse's exit otherwise."""
    if _hf_field(spec):
        shown = ", ".join(repr(w) for w in rest)
        return f"HfArgumentParser raises 'Some specified arguments are not used by the HfArgumentParser: [{shown}]'"
    return f"argparse exits with 'unrecognized arguments: {' '.join(rest)}'"


def _hf_field(spec: Any) -> bool:
    """The flag is a dataclass field of an HfArgumentParser (not one Megatron's ArgumentGroupFactory put on a
    plain argparse parser: megatron/training/argument_utils.py)."""
    from packlint.codebase.argparse_reader.dataclass_flags import FACTORY

    g = getattr(spec, "generated_from", None) or ""
    return bool(g) and not g.startswith(FACTORY)


def _positional_reason(room: int) -> str:
    takes = "any number of words (nargs '*', '+' or REMAINDER)" if room < 0 else f"up to {room} words"
    return f"the parser defines positional arguments that take {takes}: the words after it may be theirs"


_LINE_STARTS: dict[str, list[int]] = memo()
_EXPANSION_START = re.compile(r"""(?:[ \t]|\\\n)*"?\$(?![('"])""")


def _offset(path: str, line: int | None, column: int | None) -> int | None:
    """The text offset of a 1-based (line, column) in the file."""
    if not line or not column:
        return None
    starts = _LINE_STARTS.get(path)
    if starts is None:
        text = _script_text(path)
        starts = [0]
        starts.extend(i + 1 for i, c in enumerate(text) if c == "\n")
        _LINE_STARTS[path] = starts
    if line > len(starts):
        return None
    return starts[line - 1] + column - 1


def _value_after_empty_expansion(occ: FlagEntryJSON, flag: str) -> Any:
    """Undecided when the word written right after the flag is an expansion (`--seed $1 2e-5`,
    `--lr ${LR} 1e-4`) and the value packlint paired with the flag is a word written after it: the
    expansion gave no word in packlint's model (an unset variable, a positional parameter the caller
    gives), so the value is only positionally guessed. With the caller's value every later word shifts;
    an unknown value is never an empty word. None when the pairing is not in doubt."""
    path, vloc = occ.get("file"), occ.get("value_location")
    if not path or not isinstance(vloc, dict) or vloc.get("file") != path:
        return None
    end = _offset(path, occ.get("end_line"), occ.get("end_column"))
    start = _offset(path, occ.get("line"), occ.get("column"))
    if end is None or start is None:
        return None
    text = _script_text(path)
    if text[start:end] != flag:  # the flag came out of a string or an array: not a written word
        return None
    m = _EXPANSION_START.match(text, end)
    if m is None or m.end() - 1 == end:  # no expansion next (the match needs at least the `$`)
        return None
    dollar = m.end() - 1
    value_at = _offset(path, vloc.get("line"), vloc.get("column"))
    if value_at is None or value_at <= dollar:
        return None  # the value is what the expansion gave (its span is the variable's assignment)
    return Unk(
        f"the word after {flag} is an expansion that gives no word here (a value the caller may set): "
        "the value packlint pairs with it is only a positional guess",
        "unknown",
    )


def _followed_by_placeholder(occ: FlagEntryJSON, flag: str, files: tuple[str, ...] = ()) -> bool:
    """The script writes the flag followed by a `<placeholder>` (Skylanding/InsPO's `--wandb_project
    <your-wandb-project-name>`)."""
    path = occ.get("file")
    if not path:
        return False
    at = _offset(path, occ.get("end_line"), occ.get("end_column"))
    return at is not None and _PLACEHOLDER_AFTER.match(_script_text(path), at) is not None


_PLACEHOLDER_AFTER = re.compile(r"(?:[ \t]|\\\n)+<[A-Za-z_][^\s<>|&;]*>")


def emptied_names(variant: Any) -> list[str]:
    """The variables the script itself sets to the empty string (`SOURCE=""`), as the launch sees them: an unquoted
    `$SOURCE` after a flag gives bash no word there, from the checkout alone (h-hold17c-mm's empty placeholder). Not
    one whose empty value rests on an assumption (`idx=$SLURM_ARRAY_TASK_ID`, a cluster's variable; `X=${X}`)."""
    out = []
    for table in ("env", "unexported"):
        for name, entry in (variant.get(table) or {}).items():
            if (
                isinstance(entry, dict)
                and entry.get("value") == ""
                and entry.get("source") == "script"
                and "evidence" not in entry  # (`idx=$SLURM_ARRAY_TASK_ID`, `X=${X}`: the machine's, not the script's)
            ):
                out.append(name)
    return out


def unset_value_after(occ: FlagEntryJSON, flag: str, files: tuple[str, ...], vanished: list[str]) -> str | None:
    """The variable of `--flag $NAME` (`${NAME}`) in the script or a file that sets the launch's variables, when NAME is
    one the script never sets and whose word bash dropped (the variant's `vanished`): the flag got no value on this
    machine's say (Cmoris/StreamingSpeechLLM: `--model_max_length $MAX_LENGTH --lora_enable`, MAX_LENGTH set in the
    sibling scripts only). None otherwise (a caller's `$1`, a variable the script sets)."""
    if not vanished:
        return None
    paths = [occ.get("file"), *files]
    pattern = re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?:[ \t]|\\\n)+\$\{?([A-Za-z_]\w*)\}?(?![\w\[:])")
    for path in dict.fromkeys(p for p in paths if p):
        for m in pattern.finditer(_script_text(path)):
            if m.group(1) in vanished:
                return m.group(1)
    return None


def _followed_by_expansion(occ: FlagEntryJSON, flag: str, files: tuple[str, ...] = ()) -> bool:
    """The script (or a file it sources that sets the launch's variables) writes the flag followed by
    an unquoted `$...` word (`--load $CKPT`, also inside a string of flags built in a sourced file and
    run with `eval`), so a missing value may be an empty expansion the caller is meant to fill. Quoted, a list
    (`"$@"`, `"${@:3}"`, `"${DATASETS[@]}"`) is as many words as it holds, none when empty: the same (Tobeginwith/
    MRCL-Merge's compute_mask.sh, `DATASETS=("$@")` then `--datasets "${DATASETS[@]}"`)."""
    paths = [occ.get("file"), *files]
    pattern = r"(?<![\w-])" + re.escape(flag) + r'(?:[ \t]|\\\n)+(?:\$(?!\()|"\$(?:@|\{@|\{[A-Za-z_]\w*\[@\]))'
    return any(re.search(pattern, _script_text(path)) is not None for path in dict.fromkeys(p for p in paths if p))
