"""Flags generated from a dataclass, as Megatron's `ArgumentGroupFactory(Cls, exclude=[...])
.build_group(parser)` makes them (the rules of megatron/training/argument_utils.py)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from packlint.codebase.argparse_reader import argparse_calls
from packlint.codebase.argparse_reader.values import UNKNOWN, Module, Parser, V
from packlint.codebase.filefacts import unparse
from packlint.codebase.model import FlagSpec

if TYPE_CHECKING:
    from packlint.codebase.argparse_reader.interpreter import SchemaReader

# the mark of a flag Megatron's factory made (FlagSpec.generated_from): the parser is a plain argparse one, whose
# errors are argparse's, not HfArgumentParser's
FACTORY = "ArgumentGroupFactory:"


def is_factory_class(reader: SchemaReader, cls: V, depth: int = 0) -> bool:
    if depth > 10 or cls.node is None:
        return False
    if cls.value == "ArgumentGroupFactory":
        return True
    for b in cls.node.bases:
        bv = reader.eval_in_module(cls.module, b)
        if bv.kind == "class" and is_factory_class(reader, bv, depth + 1):
            return True
        if bv.kind == "extname" and bv.value.endswith("ArgumentGroupFactory"):
            return True
    return False


def build_group(reader: SchemaReader, mod, node: ast.Call, fac: V, env, conds, depth) -> V:
    args = [reader.eval(mod, a, env, conds, depth) for a in node.args]
    kwargs = {k.arg: reader.eval(mod, k.value, env, conds, depth) for k in node.keywords if k.arg}
    target = args[0] if args else kwargs.get("parser", UNKNOWN)
    if target.kind not in ("parser", "group"):
        return UNKNOWN
    p: Parser = target.value
    cls: V = fac.value
    exclude_v: V = fac.extra if isinstance(fac.extra, V) else V("const", None)
    if cls.kind != "class":
        p.open_reasons.append(
            f"ArgumentGroupFactory of {unparse(fac.node.args[0]) if fac.node.args else '?'} "
            f"({reader.where(fac.module, fac.node)}): the dataclass was not found"
        )
        return V("group", p)
    if exclude_v.kind == "const":
        exclude = set(exclude_v.value or [])
    else:
        exclude = set()
        p.open_reasons.append(f"the exclude list at {reader.where(fac.module, fac.node)} is not known")
    for fname, ann, value, fmod, fnode in dataclass_fields(reader, cls):
        if fname in exclude:
            continue
        spec = field_flag(reader, cls, fname, ann, value, fmod, fnode, conds)
        if spec is not None:
            p.add(spec)
    return V("group", p)


def dataclass_fields(reader: SchemaReader, cls: V, depth: int = 0) -> list[tuple]:
    """(name, annotation, value, module, node) of every init field, bases first, as dataclasses."""
    if depth > 10 or cls.node is None:
        return []
    fields: dict[str, tuple] = {}
    for b in cls.node.bases:
        bv = reader.eval_in_module(cls.module, b)
        if bv.kind == "class":
            for f in dataclass_fields(reader, bv, depth + 1):
                fields[f[0]] = f
    for stmt in cls.node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        ann_text = unparse(stmt.annotation, 200) or ""
        if ann_text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar")):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and unparse(value.func) in ("field", "dataclasses.field"):
            init = next((k.value for k in value.keywords if k.arg == "init"), None)
            if isinstance(init, ast.Constant) and init.value is False:
                fields.pop(stmt.target.id, None)
                continue
        name = stmt.target.id
        if name in fields:  # an override keeps the base class's position (as dataclasses do)
            fields[name] = (name, stmt.annotation, value, cls.module, stmt)
        else:
            fields[name] = (name, stmt.annotation, value, cls.module, stmt)
    return list(fields.values())


def field_flag(reader: SchemaReader, cls: V, fname: str, ann, value, fmod: Module, fnode, conds) -> FlagSpec | None:
    default_node = value
    meta = None
    if isinstance(value, ast.Call) and unparse(value.func) in ("field", "dataclasses.field"):
        kws = {k.arg: k.value for k in value.keywords if k.arg}
        default_node = kws.get("default")
        if default_node is None and "default_factory" in kws:
            default_node = ast.Call(func=kws["default_factory"], args=[], keywords=[])
        md = kws.get("metadata")
        if isinstance(md, ast.Dict):
            for k, v in zip(md.keys, md.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(v, ast.Dict):
                    meta = {
                        kk.value: vv for kk, vv in zip(v.keys, v.values, strict=True) if isinstance(kk, ast.Constant)
                    }
    kw: dict = {}
    options = ["--" + fname.replace("_", "-")]
    ok = extract_type(reader, fmod, ann, kw)
    if ok and kw.get("type") == "bool":
        is_false = isinstance(default_node, ast.Constant) and default_node.value is False
        kw.pop("type")
        kw["action"] = V("const", "store_true" if is_false else "store_false")
        if not is_false:
            options = ["--no-" + fname.replace("_", "-"), "--disable-" + fname.replace("_", "-")]
    if not ok and meta is None:
        return None  # the real factory raises here: such a field is always excluded in working code
    if meta is not None:
        for mk, mv in meta.items():
            if mk == "arg_names":
                names = reader.eval(fmod, mv, {}, conds, 0)
                if names.kind == "const" and isinstance(names.value, (list, tuple)):
                    options = [str(n) for n in names.value]
            else:
                kw[mk] = mv
    # FlagSpec from the kwargs: AST nodes (meta) and V values (inferred) both accepted
    kw.setdefault("dest", V("const", fname))
    if "default" not in kw and default_node is not None:
        kw["default"] = default_node
    spec = argparse_calls.spec_from_kwargs(
        reader, fmod, fnode, options, kw, {}, conds, 0, generated_from=f"{FACTORY}{cls.value}.{fname}"
    )
    return spec


def extract_type(reader: SchemaReader, fmod: Module, ann, kw: dict) -> bool:
    """argument_utils._extract_type over an annotation node: fills kw (V values); False where the
    real factory raises TypeInferenceError."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(ann, ast.Name) and ann.id in ("int", "float", "str", "bool"):
        kw["type"] = ann.id if ann.id == "bool" else V("pytype", ann.id)
        return True
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        if isinstance(ann.right, ast.Constant) and ann.right.value is None:
            return extract_type(reader, fmod, ann.left, kw)
        return False
    if isinstance(ann, ast.Subscript):
        head = unparse(ann.value) or ""
        last = head.split(".")[-1]
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if last == "Optional":
            return extract_type(reader, fmod, elts[0], kw)
        if last == "Union":
            if len(elts) >= 2 and isinstance(elts[1], ast.Constant) and elts[1].value is None:
                return extract_type(reader, fmod, elts[0], kw)
            return False
        if last in ("list", "List"):
            if len(elts) != 1:
                return False
            ok = extract_type(reader, fmod, elts[0], kw)
            kw["nargs"] = V("const", "+")
            return ok
        if last == "Literal":
            vals = [e.value for e in elts if isinstance(e, ast.Constant)]
            if len(vals) != len(elts):
                return False
            kw["type"] = V("pytype", type(vals[0]).__name__) if vals else V("pytype", "str")
            kw["choices"] = V("const", vals)
            return True
        return False
    if isinstance(ann, (ast.Name, ast.Attribute)):
        v = reader.eval_in_module(fmod, ann)
        if v.kind == "class" and reader.is_enum(v):
            members = [
                s.targets[0].id
                for s in v.node.body
                if isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and not s.targets[0].id.startswith("_")
            ]
            members += [
                s.target.id
                for s in v.node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None
            ]
            kw["type"] = V("enum", members, extra=v.value)
            kw["choices"] = V("enum", members)
            return True
        if v.kind == "class":
            return True  # a primitive-like class: argparse calls it on the text
        kw["type"] = V("func", unparse(ann))
        kw["_choices_note"] = (
            f"{unparse(ann)} comes from a library packlint does not read: if it is an "
            "Enum the real parser takes its member names only"
        )
        return True
    return False
