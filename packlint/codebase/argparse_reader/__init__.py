"""The flag schema of a program, read statically: a small abstract interpreter over Python's `ast`.

It runs nothing. Starting at the program's top level, it follows calls into functions it can find in
the code base (through imports, `from x import y`, methods, callbacks passed as arguments such as
`extra_args_provider=`), tracking only what matters for argparse:

- `argparse.ArgumentParser(...)` makes a parser (its `allow_abbrev`, `conflict_handler`);
- `add_argument_group` / `add_mutually_exclusive_group` make groups that add to their parser;
- `add_argument(...)` adds a flag (option strings, dest, action, nargs, type, choices, default, help);
- Megatron's `ArgumentGroupFactory(Cls, exclude=[...]).build_group(parser)` adds one flag per dataclass
  field, with the rules of megatron/training/argument_utils.py (name `--field-name`; a bool field whose
  default is not False becomes store_false `--no-X`/`--disable-X`; Optional[T] is T; list[T] is nargs '+';
  Literal is choices; an Enum is its member names; `field(metadata={"argparse_meta": {...}})` wins);
- `parse_args` / `parse_known_args` mark the parser the program uses.

Both branches of every `if` are taken; a flag defined under one carries the condition as a note.
The schema is *open* (no unknown-flag error possible) when the program uses `parse_known_args`, an
`HfArgumentParser`, Hydra, sub-commands, a computed option name, or hands its parser to code packlint
cannot read.

- `values.py`: the abstract values (`V`), the parser being built (`Parser`), a module's namespace;
- `interpreter.py`: `SchemaReader`: name resolution, statements, expressions, calls;
- `argparse_calls.py`: `ArgumentParser(...)`, its methods, one `add_argument` -> `FlagSpec`;
- `dataclass_flags.py`: Megatron's `ArgumentGroupFactory` (flags from dataclass fields);
- here: `read_schema`, which parser the program parses with and whether its schema is closed.
"""

from __future__ import annotations

import ast
import os
import re

from packlint.codebase.argparse_reader.interpreter import FALLBACK, SchemaReader
from packlint.codebase.model import FlagSchema


def read_schema(program_file: str, index) -> FlagSchema | None:
    """The schema of the parser the program parses with (None when packlint found no parser).

    A program may parse more than once (Megatron peeks with `parse_args(ignore_unknown_args=True)`,
    i.e. parse_known_args, before the real parse): the last word belongs to a strict `parse_args`, so a
    parser parsed strictly is the schema and is closed unless something else opens it; a program
    that only ever uses parse_known_args is open."""
    reader = SchemaReader(index)
    reader.run_program(os.path.abspath(program_file))
    edited = _edits_argv(program_file) or next(iter(reader.argv_edits), None)
    if edited is not None:
        # TencentARC/ST-LLM train_hf.py: a first parser takes --cfg-path, which the program then deletes from
        # sys.argv (and appends a YAML's keys) before HfArgumentParser parses it: no parser sees the command line
        reader.global_open.append(f"the program edits sys.argv ({edited}) before a parser reads it")
    used = [p for p in reader.parsers if p.parsed]
    notes: list[str] = []
    used = _command_line_parsers(used)
    used, reasons_if = _parsers_that_run(used, notes)
    if not used:
        candidates = [p for p in reader.parsers if p.flags]
        if not candidates:
            return None
        used = [max(candidates, key=lambda p: len(p.flags))]
        used[0].open_reasons.append("packlint did not see where this parser parses the command line")
    strict = [p for p in used if p.strict]
    if strict:
        main = max(strict, key=lambda p: len(p.flags))
        for p in used:
            if p is not main and p.known_reasons:
                notes.extend(
                    f"{r}; a later strict parse_args at {main.strict[0]} still rejects unknown options"
                    for r in p.known_reasons
                )
        reasons = list(reader.global_open) + list(main.open_reasons)
        # a strict parse whose parser packlint cannot read (ROLL's run_train.py: HfArgumentParser over a
        # sub-project's dataclasses) may be the one that judges the command line: it never hands the
        # verdict to another parser of the program (there, one parsing only in a branch the launch skips)
        reasons += [
            f"another parser of the program, {p.origin}, also parses the command line and is not read: {r}"
            for p in strict
            if p is not main
            for r in p.open_reasons
        ]
    else:
        main = max(used, key=lambda p: len(p.flags))
        reasons = list(reader.global_open) + list(main.open_reasons) + list(main.known_reasons)
    notes.extend(n for n in main.notes if n not in notes)
    if main.file_parses and main.file_parses >= len(main.parsed) and not reader.global_open:
        # matsuolab/nedo_project_code's run_clm.py: only `parse_json_file(sys.argv[1])` (its command-line branch
        # commented out): the words after the JSON's path are never parsed
        from packlint.codebase.argparse_reader.argparse_calls import NO_COMMAND_LINE

        reasons.append(f"the parser of {main.origin} {NO_COMMAND_LINE}: it only reads a file or dict")
    reasons = list(dict.fromkeys(reasons + reasons_if))
    changed = _choices_changed(reader)
    if changed is not None:
        # Pai-Megatron-Patch's get_patch_args: `for action in vars(group)["_actions"]: ... if "--optimizer" in
        # action.option_strings: action.choices.append("hybridadam")`: which option's choices grow is not read
        for spec in main.flags.values():
            if spec.choices is not None:
                spec.choices, spec.choices_note = None, f"the code changes an option's choices at {changed}"
    flags = dict(main.flags)
    for p in used:
        if p is not main and p.strict and any(FALLBACK in conds for conds in _line_conds(p) + _line_conds(main)):
            # `try: args = p1.parse_args()` / `except: args = p2.parse_args()` (a bare except catches argparse's exit):
            # an option either parser takes may be the one that parses (lisun-ai/HLM's finetune_glue.py)
            flags = {**dict(p.flags), **flags}
    return FlagSchema(
        flags,
        main.allow_abbrev,
        main.conflict_handler,
        not reasons,
        reasons,
        main.origin,
        notes,
        "hf" if main.kind == "hf" else "argparse",
        main.positionals,
        main.positional_room,
    )


_GROW = ("append", "extend", "insert")


def _choices_changed(reader: SchemaReader) -> str | None:
    """file:line of the first place, in the code the reader read, that changes an argparse action's choices after
    it was made (`action.choices.append(x)`, `action.choices = [...]`, `action.choices += [...]`), else None."""
    for path, mod in reader.modules.items():
        if mod is None or mod.tree is None:
            continue
        src = reader.index.sources.get(path)
        if src is not None and b".choices" not in src.data:  # (the walk below costs 1 s on a 600-script fork)
            continue
        for node in ast.walk(mod.tree):
            target = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROW:
                target = node.func.value
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                target = next(iter(node.targets), None) if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Attribute) and target.attr == "choices":
                return f"{path}:{getattr(node, 'lineno', 0)}"
    return None


def _surely_parses(p) -> bool:
    """Whether one of the parser's parse calls runs whatever the program's state: under no condition, or only
    under conditions on `sys.argv` (`if len(sys.argv) == 2 and sys.argv[1].endswith(".json")`: the launch's
    command line decides them, and packlint checks a command line with flags)."""
    return any(all("sys.argv" in c or c == FALLBACK for c in conds) for conds in _line_conds(p))


def _line_conds(p) -> list[tuple[str, ...]]:
    """The conditions of the parser's parses of the command line (its parses of a file or dict left out)."""
    return [conds for i, conds in enumerate(p.parse_conds) if i not in p.file_parse_at]


def _parsers_that_run(used: list, notes: list[str]) -> tuple[list, list[str]]:
    """sagerpascal/deepspeed-llm's eval/gen_model_answers.py parses with argparse (`--model-id`, required) and
    reaches, through a function-level import, a helper calling HfArgumentParser(...).parse_args_into_dataclasses()
    only `if model_id is None`. A parser that parses only under a condition packlint cannot decide does not
    judge the command line when another parser surely parses it (a note says so); where every parser is
    conditional and there are several, which one parses is not known from the code: the schema is open."""
    sure = [p for p in used if _surely_parses(p)]
    maybe = [p for p in used if p not in sure]
    if sure and maybe and not any(p.strict for p in sure):
        # the sure parsers only pre-parse (parse_known_args: mlfoundations/open_lm's `--config` pre-parser, whose
        # strict parser runs unless a config is given): the conditional strict parser is the one that judges
        return used, []
    if sure and maybe:
        for p in maybe:
            when = "; ".join(dict.fromkeys(c for conds in _line_conds(p) for c in conds))
            notes.append(f"the parser of {p.origin} parses the command line only {when}: its flags are not judged")
        return sure, []
    if not sure and len(maybe) > 1 and sum(1 for p in maybe if len(p.flags) > 1) > 1:
        whens = "; ".join(
            f"{p.origin} {' and '.join(dict.fromkeys(c for conds in _line_conds(p) for c in conds))}" for p in maybe
        )
        return used, [f"which parser parses the command line depends on conditions packlint cannot decide ({whens})"]
    return used, []


def _command_line_parsers(used: list) -> list:
    """The parsers that parse the command line: a parser whose every parse is given a list packlint cannot
    tell is the command line's (DeepLearningExamples' `get_model_args(model_argv)`: `parser.parse_args(model_args)`,
    the words after `--`) gives way to one that surely parses it; alone, it leaves the schema open."""

    def only_lists(p) -> bool:
        return bool(p.list_parses) and len(p.list_parses) >= len(p.parsed)

    sure = [p for p in used if not only_lists(p)]
    if sure:
        return sure
    for p in used:
        p.open_reasons.extend(f"{w}: packlint cannot tell whether that is the command line" for w in p.list_parses)
    return used


def file_keys(schema: FlagSchema | None) -> tuple[bool, frozenset[str] | None]:
    """(whether the program's own HfArgumentParser parses a file or dict itself (`parse_yaml_file(path)`,
    waltbai/G2S-TKG-forecasting's src/args.py), the keys it takes: its dataclasses' fields, None when they
    are not all read). A stack's reading of such a file is not the program's."""
    from packlint.codebase.argparse_reader.argparse_calls import FROM_FILE, NO_COMMAND_LINE

    if schema is None or schema.kind != "hf" or not any(FROM_FILE in r for r in schema.open_reasons):
        return False, None
    modes = (FROM_FILE, NO_COMMAND_LINE, "unknown options are returned", "unknown options are passed through")
    if any(not any(m in r for m in modes) for r in schema.open_reasons):
        return True, None  # a dataclass not read, a computed flag...: its keys are not known
    return True, frozenset(spec.dest for spec in schema.flags.values() if spec.dest)


_ARGV_EDIT = re.compile(
    r"^[ \t]*(?:del[ \t]+sys\.argv\[|sys\.argv(?:\[[^\]\n]*\])?[ \t]*(?:=[^=]|\+=)|"
    r".*\bsys\.argv\.(?:pop|remove|insert|append|extend|clear)\()",
    re.M,
)


def _edits_argv(program_file: str) -> str | None:
    """The first line of the program's own file that changes sys.argv (`del sys.argv[i:i+2]`, `sys.argv.pop(1)`,
    `sys.argv = [...]`), shown as `file:line`; None when it has none."""
    from packlint.safe_io import read_regular

    data = read_regular(program_file, 4 << 20)
    if data is None:
        return None
    if b"sys.argv" not in data:  # (every form below names it: the search is slow on a long program)
        return None
    text = data.decode("utf-8", "replace")
    m = _ARGV_EDIT.search(text)
    if m is None:
        return None
    return f"{os.path.basename(program_file)}:{text.count(chr(10), 0, m.start()) + 1}"
