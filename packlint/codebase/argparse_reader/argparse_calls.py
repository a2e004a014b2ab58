"""argparse itself, as the schema reader meets it: `ArgumentParser(...)` (and `HfArgumentParser`),
the parser's methods (`add_argument_group`, `add_argument`, `parse_args` / `parse_known_args`,
`add_subparsers`), and one `add_argument` call read into a `FlagSpec`."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from packlint.codebase.argparse_reader.values import UNKNOWN, Parser, V
from packlint.codebase.filefacts import unparse
from packlint.codebase.model import FlagSpec

if TYPE_CHECKING:
    from packlint.codebase.argparse_reader.interpreter import SchemaReader

# the schema note that says how a TrlParser program treats `--config` YAML keys no dataclass defines
TRL_CONFIG_NOTE = "TrlParser --config keys no dataclass defines: "

_BOOL_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}


def subclasses_argparse(reader: SchemaReader, cls: V, depth: int = 0) -> bool:
    if depth > 10 or cls.node is None:
        return False
    for b in cls.node.bases:
        bv = reader.eval_in_module(cls.module, b)
        if bv.kind == "builtin" and bv.value == "argparse.ArgumentParser":
            return True
        if bv.kind == "class" and subclasses_argparse(reader, bv, depth + 1):
            return True
    return False


def call_builtin(reader: SchemaReader, mod, node, name: str, args, kwargs, conds) -> V:
    if name == "argparse.ArgumentParser":
        return new_parser(reader, mod, node, kwargs, conds)
    if name in ("HfArgumentParser", "TrlParser"):
        from packlint.codebase.argparse_reader.hf_dataclasses import hf_parser

        return hf_parser(reader, mod, node, name, args[0] if args else kwargs.get("dataclass_types"))
    if name.rsplit(".", 1)[-1].endswith("ArgumentParser"):  # (parser_class_elsewhere)
        made = new_parser(reader, mod, node, kwargs, conds)
        made.value.open_reasons.append(
            f"the parser is a {name} ({reader.where(mod, node)}), a class of a package packlint cannot read"
        )
        return made
    return UNKNOWN


def parser_class_elsewhere(callee: V) -> bool:
    """`QuinineArgumentParser` (lorr1/Megatron-LM, imported from quinine under try/except): an argparse parser
    class of a package packlint cannot read, whose own flags (quinine's --config) it cannot see: its parser is
    open (and so is a plain parser an `if` picks instead: interpreter._merge_envs)."""
    return callee.kind == "extname" and str(callee.value).rsplit(".", 1)[-1].endswith("ArgumentParser")


def new_parser(reader: SchemaReader, mod, node, kwargs, conds) -> V:
    ab = kwargs.get("allow_abbrev")
    ch = kwargs.get("conflict_handler")
    p = Parser(
        reader.where(mod, node),
        not (ab is not None and ab.kind == "const" and ab.value is False),
        ch.value if ch is not None and ch.kind == "const" and isinstance(ch.value, str) else "error",
    )
    if ab is not None and ab.kind != "const":
        p.notes.append("allow_abbrev is computed; taken as True")
    ah = kwargs.get("add_help")
    if not (ah is not None and ah.kind == "const" and ah.value is False):
        p.add(
            FlagSpec(
                ("-h", "--help"),
                "help",
                "help",
                0,
                "bool",
                None,
                None,
                "'==SUPPRESS=='",
                False,
                None,
                mod.path,
                getattr(node, "lineno", None),
                None,
                "argparse add_help",
            )
        )
    _inherit(reader, mod, node, p, kwargs.get("parents"))
    reader.parsers.append(p)
    return V("parser", p)


def init_parser(reader: SchemaReader, mod, node, p: Parser, kwargs: dict[str, V]) -> None:
    """`super().__init__(...)` in an ArgumentParser subclass's `__init__` (NJU-LHRS/LHRS-Bot's
    ConfigArgumentParser passes `parents=[self.config_parser]`, whose `-c/--config` the program's parser
    then takes): the parents' flags, `add_help=False`, `allow_abbrev`, `conflict_handler` on the parser."""
    ab, ch, ah = kwargs.get("allow_abbrev"), kwargs.get("conflict_handler"), kwargs.get("add_help")
    if ab is not None:
        p.allow_abbrev = not (ab.kind == "const" and ab.value is False)
    if ch is not None and ch.kind == "const" and isinstance(ch.value, str):
        p.conflict_handler = ch.value
    if ah is not None and ah.kind == "const" and ah.value is False:
        for o in ("-h", "--help"):
            if o in p.flags and p.flags[o].action == "help":
                del p.flags[o]
    _inherit(reader, mod, node, p, kwargs.get("parents"))


def _inherit(reader: SchemaReader, mod, node, p: Parser, parents: V | None) -> None:
    """`ArgumentParser(parents=[get_args_parser()])` (DeiT's `main.py`, and the many trainers made from it):
    argparse copies the parents' arguments into the new parser when it is made (after its own -h). Parents
    packlint cannot list (a list built by `append` under conditions), or whose own schema is open, leave the
    new parser's schema open."""
    if parents is None:
        return
    written = next((k.value for k in getattr(node, "keywords", ()) if k.arg == "parents"), None)
    if parents.kind == "const" and not parents.value and isinstance(written, (ast.List, ast.Tuple)):
        return  # `parents=[]` as written (a name bound to [] may have been appended to since)
    items = parents.value if parents.kind == "tuple" else None
    if not isinstance(items, list) or not all(i.kind == "parser" for i in items):
        where = reader.where(mod, node)
        p.open_reasons.append(f"its parent parsers ({where}) are not all read: their flags are not seen")
        return
    for parent in items:
        q: Parser = parent.value
        seen: set[int] = set()  # (one spec per argument, not per option string)
        for spec in q.flags.values():
            if id(spec) in seen or (spec.action == "help" and any(o in p.flags for o in spec.options)):
                continue
            seen.add(id(spec))
            p.add(spec)
        p.open_reasons.extend(q.open_reasons)
        if q.positionals:
            p.positionals = True
            p.positional_room = joined_room(p.positional_room, q.positional_room)


# the reason an HfArgumentParser's parse of a file or dict (parse_yaml_file, parse_json_file, parse_dict) gives
FROM_FILE = "reads the arguments from a file"
# the reason a parser whose every parse is of a file or dict gives: the words of the command line are not its
NO_COMMAND_LINE = "parses no command line"


def parser_method(reader: SchemaReader, mod, node: ast.Call, obj: V, attr: str, env, conds, depth) -> V:
    p: Parser = obj.value
    kwargs = {k.arg: reader.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
    if attr in ("add_argument_group", "add_mutually_exclusive_group"):
        handler = obj.extra if obj.kind == "group" and obj.extra else p.conflict_handler
        ch = kwargs.get("conflict_handler")
        if ch is not None and ch.kind == "const":
            handler = ch.value
        return V("group", p, extra=handler)
    if attr == "add_argument":
        add_argument(
            reader,
            mod,
            node,
            p,
            env,
            conds,
            depth,
            obj.extra if obj.kind == "group" and obj.extra else p.conflict_handler,
        )
        return UNKNOWN
    if p.kind == "hf" and attr.startswith("parse_"):  # parse_args_into_dataclasses, parse_json_file...
        return _hf_parse(reader, mod, node, p, attr, kwargs, env, conds, depth)
    given = _given_args(reader, mod, node, env, conds, depth) if attr.startswith("parse_") else None
    if given is not None:
        if given[1]:  # a list the program writes itself: never the command line's parse
            p.open_reasons.append(
                f"{attr}({given[0]}) at {reader.where(mod, node)} parses a list, not the command line"
            )
            return UNKNOWN
        p.list_parses.append(f"{attr}({given[0]}) at {reader.where(mod, node)}")
    if attr in ("parse_args", "parse_intermixed_args"):
        p.parsed.append(reader.where(mod, node))
        p.parse_conds.append(tuple(conds))
        p.strict.append(reader.where(mod, node))
        return UNKNOWN
    if attr in ("parse_known_args", "parse_known_intermixed_args"):
        p.parsed.append(reader.where(mod, node))
        p.parse_conds.append(tuple(conds))
        note = f"parse_known_args at {reader.where(mod, node)}: unknown options are passed through"
        p.known_reasons.append(note + (f" (only {'; '.join(conds)})" if conds else ""))
        return UNKNOWN
    if attr == "add_subparsers":
        p.open_reasons.append(f"sub-commands (add_subparsers at {reader.where(mod, node)})")
        return UNKNOWN
    if attr == "set_defaults":
        return UNKNOWN
    if attr == "add_argument_group_from":  # pragma: no cover - placeholder for forks
        return UNKNOWN
    return UNKNOWN


def _hf_parse(reader: SchemaReader, mod, node: ast.Call, p: Parser, attr: str, kwargs: dict, env, conds, depth) -> V:
    """An HfArgumentParser's parse call: parse_args_into_dataclasses, parse_args_and_config, parse_json_file..."""
    if attr in ("parse_args_into_dataclasses", "parse_args_and_config"):
        # `parse_args_into_dataclasses(args=unknown)`, the leftovers of an argparse parser's parse_known_args
        # (facebookresearch/SpinQuant's process_args_ptq): another parser had the command line first
        given = _given_args(reader, mod, node, env, conds, depth)
        if given is not None and given[1]:
            p.open_reasons.append(
                f"{attr}({given[0]}) at {reader.where(mod, node)} parses a list, not the command line"
            )
            return UNKNOWN
        if given is not None:
            p.list_parses.append(f"{attr}({given[0]}) at {reader.where(mod, node)}")
    p.parsed.append(reader.where(mod, node))
    p.parse_conds.append(tuple(conds))
    if attr == "parse_args_and_config":  # TRL: what a `--config` YAML key no dataclass has does
        fail = kwargs.get("fail_with_unknown_args")
        if fail is not None and fail.kind == "const" and fail.value is False:
            p.notes.append(f"{TRL_CONFIG_NOTE}ignored (fail_with_unknown_args=False at {reader.where(mod, node)})")
        elif fail is None or fail.kind == "const":
            p.notes.append(f"{TRL_CONFIG_NOTE}rejected (parse_args_and_config at {reader.where(mod, node)})")
    if attr in ("parse_args_into_dataclasses", "parse_args_and_config"):
        flag = kwargs.get("args_file_flag")  # a flag read by a parser of its own before the dataclasses'
        if flag is not None and flag.kind == "const" and isinstance(flag.value, str) and flag.value.startswith("-"):
            p.add(
                FlagSpec(
                    (flag.value,),
                    flag.value.lstrip("-"),
                    "append",
                    None,
                    "str",
                    None,
                    None,
                    None,
                    False,
                    None,
                    mod.path,
                    getattr(node, "lineno", None),
                )
            )
        elif flag is not None and flag.kind != "const":
            p.open_reasons.append(f"args_file_flag at {reader.where(mod, node)} is computed")
        rest = kwargs.get("return_remaining_strings")
        if rest is None or (rest.kind == "const" and rest.value is False):
            # hf_argparser.py: leftover arguments raise "Some specified arguments are not used"
            p.strict.append(reader.where(mod, node))
        else:
            p.known_reasons.append(
                f"{attr}(return_remaining_strings=...) at {reader.where(mod, node)}: unknown options are returned"
            )
    elif attr in ("parse_known_args",):
        p.known_reasons.append(f"parse_known_args at {reader.where(mod, node)}: unknown options are passed through")
    else:
        p.file_parses += 1
        p.file_parse_at.add(len(p.parse_conds) - 1)  # (no parse of the command line: it decides nothing there)
        p.known_reasons.append(f"{attr} at {reader.where(mod, node)} {FROM_FILE}")
        extra = kwargs.get("allow_extra_keys")
        if extra is not None and not (extra.kind == "const" and extra.value is False):
            p.open_reasons.append(f"{attr}(allow_extra_keys=...) at {reader.where(mod, node)} may take any key")
    return UNKNOWN


def add_argument(
    reader: SchemaReader, mod, node: ast.Call, p: Parser, env, conds, depth, handler: str | None = None
) -> None:
    options: list = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            v = reader.eval(mod, a.value, env, conds, depth)
            if v.kind == "const" and isinstance(v.value, (list, tuple)):
                options.extend(v.value)
                continue
            p.open_reasons.append(f"option names computed at {reader.where(mod, node)}")
            return
        v = reader.eval(mod, a, env, conds, depth)
        if v.kind != "const" or not isinstance(v.value, str):
            p.open_reasons.append(f"an option name computed at {reader.where(mod, node)}")
            return
        options.append(v.value)
    if not options or not all(isinstance(o, str) and o.startswith("-") for o in options):
        p.positionals = True  # a positional argument: words after a switch may be its value
        p.positional_room = joined_room(p.positional_room, positional_room(reader, mod, node, env, conds, depth))
        return
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    if any(k.arg is None for k in node.keywords):
        p.notes.append(f"add_argument(**kwargs) at {reader.where(mod, node)}: keyword details not read")
        if "action" not in kw and "nargs" not in kw:
            # radixark/miles' `reset_arg(parser, name, **kwargs)` ends `parser.add_argument(name, **kwargs)`, its
            # callers passing action="store_true": how many words the flag takes is not known here
            kw["nargs"] = ast.Name(id="__packlint_unread_kwargs__", ctx=ast.Load())
    spec = spec_from_kwargs(reader, mod, node, options, kw, env, conds, depth)
    p.add(spec, handler)
    if spec.action.startswith("custom:") and _action_adds_flags(reader.eval(mod, kw["action"], env, conds, depth)):
        # microsoft/DeBERTa apps/run.py: `--task_name`'s LoadTaskAction calls the task's add_arguments while the
        # command line is parsed (and run.py parses twice): the flags it adds are not known here
        p.open_reasons.append(
            f"the action of {spec.options[0]} ({spec.action[7:]}) adds flags while the command line is parsed"
        )


def _action_adds_flags(av: V) -> bool:
    """A custom Action class whose `__call__` adds arguments (calls anything named add_argument(s) or
    add_argument_group): it changes the parser during the parse."""
    node = getattr(av, "node", None)
    if av.kind != "class" or not isinstance(node, ast.ClassDef):
        return av.kind == "unknown"  # (an Action packlint cannot find: it may; a library's named one does not)
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__call__":
            for sub in ast.walk(item):
                if isinstance(sub, ast.Call):
                    f = sub.func
                    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                    if name.startswith("add_argument"):
                        return True
    return False


REMAINDER_ROOM = -2  # a positional with nargs=REMAINDER (or PARSER): every word after it is its, options included


def joined_room(have: int, room: int) -> int:
    """The positionals' room once one more takes `room` words (negative: any number; REMAINDER wins)."""
    if REMAINDER_ROOM in (have, room):
        return REMAINDER_ROOM
    return -1 if room < 0 or have < 0 else have + room


def positional_room(reader: SchemaReader, mod, node: ast.Call, env, conds, depth) -> int:
    """How many words a positional argument takes, by its `nargs`: none given or `?` one, N N, and `*`,
    `+`, `argparse.REMAINDER` (`...`), `argparse.PARSER` or anything packlint cannot read any number (-1)."""
    nargs = next((k.value for k in node.keywords if k.arg == "nargs"), None)
    if nargs is None:
        return 1
    if (isinstance(nargs, ast.Attribute) and nargs.attr in ("REMAINDER", "PARSER")) or (
        isinstance(nargs, ast.Name) and nargs.id in ("REMAINDER", "PARSER")  # `from argparse import REMAINDER`
    ):
        return REMAINDER_ROOM
    if isinstance(nargs, ast.Attribute) and nargs.attr in ("ZERO_OR_MORE", "ONE_OR_MORE"):
        return -1
    v = reader.eval(mod, nargs, env, conds, depth)
    if v.kind == "const" and v.value in ("...", "A..."):  # argparse.REMAINDER / argparse.PARSER written out
        return REMAINDER_ROOM
    if v.kind == "const" and v.value == "?":
        return 1
    if v.kind == "const" and isinstance(v.value, int) and not isinstance(v.value, bool) and v.value >= 0:
        return int(v.value)
    return -1


def spec_from_kwargs(reader: SchemaReader, mod, node, options, kw, env, conds, depth, generated_from=None) -> FlagSpec:
    """One flag from `add_argument`'s keywords (AST nodes) or a dataclass field's (V values, from
    dataclass_flags.py); keywords are evaluated in argparse's order, as before."""

    def value(name: str):
        n = kw.get(name)
        return reader.eval(mod, n, env, conds, depth) if isinstance(n, ast.AST) else n

    def const(name: str):
        v = value(name) if kw.get(name) is not None else None
        return v.value if isinstance(v, V) and v.kind == "const" else None

    long = next((o for o in options if o.startswith("--")), options[0])
    dest = const("dest") or long.lstrip("-").replace("-", "_")
    action = "store" if kw.get("action") is None else _action_name(value("action"), kw["action"])
    nargs = None if kw.get("nargs") is None else _nargs(value("nargs"))
    typ = "str" if kw.get("type") is None else type_name(reader, mod, kw["type"], env, conds, depth)
    if action in _BOOL_ACTIONS or action == "BooleanOptionalAction":
        typ = "bool" if action in ("store_true", "store_false", "BooleanOptionalAction") else typ
    choices, choices_note = (None, None) if kw.get("choices") is None else _choices(value("choices"), kw["choices"])
    if choices is None and choices_note is None and isinstance(kw.get("_choices_note"), str):
        choices_note = kw["_choices_note"]
    default = _default_text(kw.get("default"), action)
    required = bool(const("required"))
    deprecated = "argparse deprecated=True" if const("deprecated") is True else None
    help_text = None if kw.get("help") is None else _help_text(value("help"), kw["help"])
    if deprecated is None and help_text and any(w in help_text.lower() for w in ("deprecated", "no longer")):
        deprecated = "help: " + " ".join(help_text.split())[:100]
    if action == "BooleanOptionalAction":  # argparse adds --no-X for every --X
        options = list(options) + ["--no-" + o[2:] for o in options if o.startswith("--")]
    cond = "; ".join(dict.fromkeys(c for c in conds)) or None
    line = getattr(node, "lineno", None)
    return FlagSpec(
        tuple(options),
        dest,
        action,
        nargs,
        typ,
        choices,
        choices_note,
        default,
        required,
        deprecated,
        mod.path,
        line,
        ("only " + cond) if cond else None,
        generated_from,
    )


def _action_name(av: V, an) -> str:
    """`action=`: its name, `BooleanOptionalAction`, or `custom:<source>` for an Action class."""
    if av.kind == "const" and isinstance(av.value, str):
        return av.value
    if av.kind == "builtin" and av.value == "argparse.BooleanOptionalAction":
        return "BooleanOptionalAction"
    return "custom:" + (unparse(an, 40) if isinstance(an, ast.AST) else str(av.value))


_NARGS_CONSTANTS = {
    "argparse.REMAINDER": "...",
    "argparse.ONE_OR_MORE": "+",
    "argparse.ZERO_OR_MORE": "*",
    "argparse.OPTIONAL": "?",
}


def _nargs(nv: V):
    if nv.kind == "const":
        return nv.value
    if nv.kind == "builtin":
        return _NARGS_CONSTANTS.get(nv.value, "custom")
    return "custom"


def _choices(cv: V, cn) -> tuple[tuple | None, str | None]:
    """`choices=`: (the choices as text, None), or (None, why they are not known statically)."""
    if cv.kind == "const" and isinstance(cv.value, (list, tuple)):
        return tuple(_choice_text(c) for c in cv.value), None
    if cv.kind == "enum":
        return tuple(cv.value), None
    return None, "computed at run time: " + (unparse(cn, 60) if isinstance(cn, ast.AST) else "?")


def _default_text(dn, action: str) -> str | None:
    """`default=` as source text; store_true/store_false imply theirs."""
    if dn is not None:
        if isinstance(dn, ast.AST):
            return unparse(dn, 80)
        return repr(dn.value) if isinstance(dn, V) and dn.kind == "const" else "?"
    if action == "store_true":
        return "False"
    if action == "store_false":
        return "True"
    return None


def _help_text(hv: V, hn) -> str | None:
    if hv.kind == "const" and isinstance(hv.value, str):
        return hv.value
    return unparse(hn, 400) if isinstance(hn, ast.AST) else None


def type_name(reader: SchemaReader, mod, tn, env, conds, depth) -> str:
    if not isinstance(tn, ast.AST):
        v = tn
    else:
        if isinstance(tn, ast.Name) and tn.id in ("int", "float", "str", "bool") and tn.id not in env:
            return tn.id
        if isinstance(tn, ast.Lambda):
            return "custom:lambda"
        v = reader.eval(mod, tn, env, conds, depth)
    if isinstance(v, V):
        if v.kind == "const" and v.value in ("int", "float", "str", "bool"):
            return v.value
        if v.kind == "pytype":
            return v.value
        if v.kind == "enum":
            return "enum:" + str(v.extra)
        if v.kind in ("func", "class"):
            return "custom:" + str(v.value)
    return "custom:" + (unparse(tn, 40) if isinstance(tn, ast.AST) else "?")


def _choice_text(c) -> str:
    return c if isinstance(c, str) else repr(c) if not isinstance(c, (int, float)) or isinstance(c, bool) else str(c)


def _given_args(reader: SchemaReader, mod, node: ast.Call, env, conds, depth) -> tuple[str, bool] | None:
    """`parse_args(X)` with X neither None nor the command line's words (`sys.argv[1:]`, a name bound to them):
    (X as written, whether X is surely a list of the program's own (a literal, a constant)); None for the
    command line. DeepLearningExamples' triton/deployer.py parses `model_args`, the words after `--`."""
    arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
    if arg is None:
        return None
    v = reader.eval(mod, arg, env, conds, depth)
    if (v.kind == "const" and v.value is None) or (v.kind == "extname" and v.value == "sys.argv"):
        return None
    return unparse(arg, 40) or "...", v.kind in ("const", "tuple")
