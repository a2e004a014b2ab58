"""transformers' `HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))` and TRL's
`TrlParser`, expanded into their flags (issue 28): the dataclasses are followed through the imports
into the checkout (a repository's own classes, a vendored transformers/TRL/LLaMA-Factory) and, where a
class or a base comes from a package that is not in the checkout, into the per-release snapshots of
`rules/stack_schemas.json` (packlint.codebase.stack_schemas). Every field becomes the flag
HfArgumentParser makes of it (packlint.codebase.hf_fields). When any class cannot be resolved, the
schema stays open, as before.

Never the installed packages: the environment the checked tree runs in is not packlint's own, so a
class absent from the checkout is read from the snapshots, with every release's fields unless the
release is known from the tree (the check applies it: packlint.conditions.functions.stack_keys).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from packlint.codebase.argparse_reader.values import Parser, V
from packlint.codebase.filefacts import unparse
from packlint.codebase.model import FlagSpec

if TYPE_CHECKING:
    from packlint.codebase.argparse_reader.interpreter import SchemaReader

# a field: name -> rows (stack or None for the checkout's code, type, choices, marks, mask, file, line, origin
# and, for the checkout's code, the field's aliases)
Row = tuple


class Unresolved(Exception):
    """A dataclass (or a base of one) packlint cannot read: the schema stays open."""


def hf_parser(reader: SchemaReader, mod, node: ast.Call, name: str, given: V | None = None) -> V:
    where = reader.where(mod, node)
    p = Parser(where, True, "error", "hf")
    reader.parsers.append(p)
    p.add(FlagSpec(("-h", "--help"), "help", "help", 0, "bool", None, None, None, False, None, mod.path, node.lineno))
    if name == "TrlParser":  # parse_args_and_config pops `--config FILE` before parsing (trl/scripts/utils.py)
        p.add(FlagSpec(("--config",), "config", origin_file=mod.path, origin_line=node.lineno))
    try:
        items = _dataclass_items(reader, mod, node, given)
        fields: dict[str, list[Row]] = {}
        for item in items:
            for fname, rows in _item_fields(reader, item, 0).items():
                if fname in fields:
                    p.notes.append(
                        f"--{fname} is a field of two dataclasses: argparse raises 'conflicting option string'"
                    )
                fields[fname] = rows
    except Unresolved as why:
        p.open_reasons.append(f"{name} ({where}): {why}")
        return V("parser", p)
    for fname, rows in fields.items():
        for spec in _specs(fname, rows):
            p.add(spec)
    return V("parser", p)


def _dataclass_items(reader: SchemaReader, mod, node: ast.Call, given: V | None) -> list[V]:
    """The dataclasses, from the evaluated argument (a tuple, a local variable holding one, one class),
    else from its source (a list literal, a module-level list)."""
    if given is not None and given.kind == "tuple" and all(v.kind in ("class", "extname") for v in given.value):
        return list(given.value)
    if given is not None and given.kind in ("class", "extname"):
        return [given]
    arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dataclass_types"), None)
    if arg is None:
        raise Unresolved("no dataclasses given")
    if isinstance(arg, ast.Name) and isinstance(mod.assigns.get(arg.id), (ast.List, ast.Tuple)):
        arg = mod.assigns[arg.id]  # `_TRAIN_ARGS = [ModelArguments, ...]; HfArgumentParser(_TRAIN_ARGS)`
    elts = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
    out = []
    for e in elts:
        if isinstance(e, ast.Starred):
            raise Unresolved(f"the dataclasses {unparse(e, 60)} are computed")
        v = reader.eval(mod, e, {}, [], 0)
        if v.kind not in ("class", "extname"):
            raise Unresolved(f"the dataclass {unparse(e, 60)} was not found")
        out.append(v)
    return out


def _item_fields(reader: SchemaReader, item: V, depth: int) -> dict[str, list[Row]]:
    if depth > 12:
        raise Unresolved("the dataclass hierarchy is too deep")
    if item.kind == "extname":
        return _snapshot_fields(str(item.value))
    cls = item.node
    if not isinstance(cls, ast.ClassDef):
        raise Unresolved(f"{item.value} is not a class packlint can read")
    out: dict[str, list[Row]] = {}
    for b in cls.bases:
        text = unparse(b, 80) or ""
        if text in ("object", "ABC", "abc.ABC") or text.startswith(("Generic[", "typing.Generic[")):
            continue
        bv = reader.eval_in_module(item.module, b)
        if bv.kind not in ("class", "extname"):
            raise Unresolved(f"the base {text} of {item.value} was not found")
        out.update(_item_fields(reader, bv, depth + 1))
    from packlint.codebase.hf_fields import field_aliases, field_call, is_dataclass, own_fields

    def enum_values(ann: ast.expr) -> list[str] | None:
        v = reader.eval_in_module(item.module, ann)
        if v.kind == "class" and isinstance(v.node, ast.ClassDef) and reader.is_enum(v):
            from packlint.codebase.hf_fields import enum_values_of

            return enum_values_of(v.node)
        return None

    def is_helper(call: ast.Call) -> bool:  # a repository's own `def list_field(...): return field(...)`
        f = reader.eval_in_module(item.module, call.func)
        if f.kind != "func" or not isinstance(f.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        return any(isinstance(s, ast.Return) and field_call(s.value) is not None for s in ast.walk(f.node))

    if not is_dataclass(cls):
        # a plain subclass of a dataclass keeps its bases' fields, but HfArgumentParser types each field by
        # `typing.get_type_hints(cls)`, where the subclass's own annotation wins (OpenGVLab/InternVL's
        # `class DPOConfig(DPOConfigTRL): loss_type: Literal[..., 'sigmoid,bco_pair']`, no @dataclass): its type
        # and choices, with the base field's default
        for fname, (typ, choices, _marks, _line) in own_fields(cls, enum_values, is_helper).items():
            rows = out.get(fname)
            if rows:
                out[fname] = [(r[0], typ, choices, *r[3:]) for r in rows]
        return out
    aliases = field_aliases(cls)
    for fname, (typ, choices, marks, line) in own_fields(cls, enum_values, is_helper).items():
        if fname in aliases and aliases[fname] is None:
            raise Unresolved(f"the aliases of {item.value}.{fname} are computed")
        extra = tuple(aliases.get(fname) or ())
        out[fname] = [(None, typ, choices, marks, None, item.module.path, line, f"{item.value}.{fname}", extra)]
    return out


def _snapshot_fields(dotted: str) -> dict[str, list[Row]]:
    from packlint.codebase import stack_schemas

    stacks = stack_schemas.stack_of_module(dotted)
    name = dotted.rsplit(".", 1)[-1]
    found = stack_schemas.class_fields(name, stacks) if stacks else None
    if found is None:
        raise Unresolved(f"{dotted} is neither in the checkout nor in packlint's stack snapshots")
    return {
        f: [(st, typ, ch, marks, mask, None, None, f"{st} {name}.{f}") for st, typ, ch, marks, mask in rows]
        for f, rows in found.items()
    }


def _specs(fname: str, rows: list[Row]) -> list[FlagSpec]:
    typs = {r[1] for r in rows}
    # releases that type the field differently: the most permissive reading (`bool` in one, `bool | None
    # = None` in another takes 0 or 1 value), so that an unknown release never makes a finding
    typ = (
        typs.pop()
        if len(typs) == 1
        else ("lit" if typs <= {"lit"} else "bool" if typs <= {"bool", "bool1"} else "open")
    )
    choices: tuple[str, ...] | None = None
    if typ == "lit":
        merged: dict[str, None] = {}
        for r in rows:
            for c in r[2] or ():
                merged[str(c)] = None
        choices = tuple(merged)
    required = all("r" in r[3] for r in rows)
    releases = _releases(rows)
    first = rows[-1]
    options = [f"--{fname}"] + ([f"--{fname.replace('_', '-')}"] if "_" in fname else [])
    options += [a for r in rows if len(r) > 8 for a in r[8] if a not in options]  # HfArg's `aliases`
    nargs: object = {"bool": "?", "bool1": None, "open": "*"}.get(typ, "+" if typ.startswith("list:") else None)
    ftype = "custom:string_to_bool" if typ in ("bool", "bool1") else typ.split(":")[-1]
    ftype = ftype if ftype in ("int", "float", "str", "custom:string_to_bool") else "str"
    specs = [
        FlagSpec(
            tuple(options),
            fname,
            "store",
            nargs,
            ftype,
            choices,
            None,
            None,
            required,
            None,
            first[5],
            first[6],
            None,
            first[7],
            releases,
        )
    ]
    if typ == "bool" and any("T" in r[3] for r in rows):
        specs.append(
            FlagSpec(
                (f"--no_{fname}", f"--no-{fname.replace('_', '-')}"),
                fname,
                "store_false",
                0,
                "bool",
                origin_file=first[5],
                origin_line=first[6],
                generated_from=first[7],
                releases=releases,
            )
        )
    return specs


def _releases(rows: list[Row]) -> str | None:
    """'stack:mask' when the field comes from a snapshot and not every release of it has it (the
    checkout's own definition, or every release, makes it always defined: None)."""
    if any(r[0] is None for r in rows):
        return None
    from packlint.codebase import stack_schemas

    masks: dict[str, int] = {}
    for r in rows:
        masks[r[0]] = masks.get(r[0], 0) | int(r[4] or 0)
    parts = []
    for st, m in masks.items():
        full = (1 << len(stack_schemas.releases(st))) - 1
        if m & full == full:
            return None  # every release of one of the stacks defines it
        parts.append(f"{st}:{m}")
    return ";".join(parts) or None
