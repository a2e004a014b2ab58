"""The choices of a pydantic model's fields that pydantic checks before anything else can change the
value (axolotl's config schema, issue 28 item 3), read with `ast` (never imported).

A field gets choices ("lit") only when its annotation is a pure `Literal[...]` of strings or a string
Enum (each optionally `| None` / `Optional[...]`): pydantic then rejects any other string, and a boolean
or a number, with a ValidationError (lax mode converts no bool or number to a str). Anything else
(`Literal[...] | str`, `| bool`, `Annotated[...]`, an Enum with a non-string member or a `_missing_`
hook) is "any"; a field of plain `bool`, `int` or `float` (optionally `| None`) is "pyd:bool" etc., whose
values pydantic's lax mode converts by fixed rules. A field that a before-validator may rewrite is "any"
too: a `field_validator(..., mode="before"|"wrap")` naming it, or a `model_validator(mode="before"|"wrap")`
of any model that holds the field (its own class, a subclass, or a mixin beside it) that writes the key
into its input dict
(`data["k"] = ...`, `data.pop("k")`, `data.setdefault`, `data.update(k=...)`, `del data["k"]`, a
returned dict display). A write packlint cannot name (a computed key not drawn from a constant
collection, the dict handed to a function it has not read, `data.update(other)`, a class with its own
`__init__`) makes every field of those models "any".
"""

from __future__ import annotations

import ast
from typing import Any

_WILD = "*"
# the snapshot's pseudo-class of keys a before-validator raises on (read_models)
RAISED = "__raised__"
_SAFE_CALLS = {"isinstance", "len", "bool", "str", "repr", "print", "hasattr", "getattr", "any", "all", "type"}
_MUTATORS = {"pop", "setdefault", "update", "__setitem__", "__delitem__", "clear", "popitem"}


def _head(expr: ast.expr) -> str:
    return ast.unparse(expr).split(".")[-1].split("[")[0]


def _strip(ann: ast.expr) -> list[ast.expr]:
    """The members of a union annotation without None."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return [ann]
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _strip(ann.left) + _strip(ann.right)
    if isinstance(ann, ast.Constant) and ann.value is None:
        return []
    if isinstance(ann, ast.Subscript) and _head(ann.value) in ("Optional", "Union"):
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return [m for e in elts for m in _strip(e)]
    return [ann]


def str_enums(nodes: dict[str, ast.ClassDef]) -> dict[str, list[str]]:
    """Enum classes whose every member is a string constant and that have no `_missing_` hook."""
    out: dict[str, list[str]] = {}
    for name, node in nodes.items():
        bases = [_head(b) for b in node.bases]
        if not any(b in ("Enum", "StrEnum") for b in bases) or any(b in ("IntEnum", "Flag", "IntFlag") for b in bases):
            continue
        vals: list[str] = []
        ok = True
        for s in node.body:
            if isinstance(s, ast.FunctionDef) and s.name == "_missing_":
                ok = False
            elif isinstance(s, ast.Assign | ast.AnnAssign):
                target = s.targets[0] if isinstance(s, ast.Assign) else s.target
                if isinstance(target, ast.Name) and target.id.startswith("_"):
                    continue
                if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                    vals.append(s.value.value)
                else:
                    ok = False
        if ok and vals:
            out[name] = vals
    return out


def field_choices(ann: ast.expr, enums: dict[str, list[str]]) -> list[str] | None:
    """The choices of a pure string Literal / string Enum annotation (optionally with None), else None."""
    members = _strip(ann)
    if len(members) != 1:
        return None
    m = members[0]
    if isinstance(m, ast.Subscript) and _head(m.value) == "Literal":
        elts = m.slice.elts if isinstance(m.slice, ast.Tuple) else [m.slice]
        vals = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return vals if vals and len(vals) == len(elts) else None
    if isinstance(m, ast.Name | ast.Attribute):
        return enums.get(_head(m))
    return None


_SCALARS = ("bool", "int", "float")


def scalar_kind(ann: ast.expr) -> str | None:
    """ "pyd:bool" / "pyd:int" / "pyd:float" (or a union of them, "pyd:float|int") for an annotation of
    only those plain types (optionally with None), which pydantic's lax mode converts by fixed rules
    (stack_config_values.pydantic_rejects); None for anything else (`StrictInt`, `Annotated[...]`, `str`)."""
    members = _strip(ann)
    heads = sorted({_head(m) for m in members if isinstance(m, ast.Name)})
    if not members or len(heads) != len(members) or any(h not in _SCALARS for h in heads):
        return None
    return "pyd:" + "|".join(heads)


def _is_before(dec: ast.expr) -> str | None:
    """'model' / 'field' for a before (or wrap) validator decorator, else None."""
    if not isinstance(dec, ast.Call):
        return None
    name = _head(dec.func)
    kw = {k.arg: k.value for k in dec.keywords}
    mode = kw.get("mode")
    word = mode.value if isinstance(mode, ast.Constant) else None
    pre = kw.get("pre")
    if name in ("model_validator", "field_validator") and word in ("before", "wrap"):
        return "model" if name == "model_validator" else "field"
    if name in ("root_validator", "validator") and isinstance(pre, ast.Constant) and pre.value is True:
        return "model" if name == "root_validator" else "field"
    return None


class _Reader:
    """The keys a validator function writes into the dict it is given."""

    def __init__(self, functions: dict[str, list[ast.FunctionDef]], constants: dict[str, list[str]]) -> None:
        self.functions = functions
        self.constants = constants

    def writes(self, fn: ast.FunctionDef, param: int, depth: int = 0) -> set[str]:
        args = [a.arg for a in fn.args.args]
        if args and args[0] in ("cls", "self"):
            args = args[1:]
        if param >= len(args) or depth > 4:
            return {_WILD}
        names = {args[param]}
        for n in ast.walk(fn):  # aliases: `d = data`, `d = dict(data)`, `d = data.copy()`
            one = isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            if one and isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and _copy_of(n.value, names):
                names.add(n.targets[0].id)
        loops = self._loop_keys(fn)
        out: set[str] = set()
        for n in ast.walk(fn):
            out |= self._node_writes(n, names, loops, depth)
        return out

    def _loop_keys(self, fn: ast.FunctionDef) -> dict[str, list[str]]:
        """`for k in CONST` / `CONST.items()` / `CONST.keys()`: the loop name's possible keys."""
        out: dict[str, list[str]] = {}
        for n in ast.walk(fn):
            gens = [(n.target, n.iter)] if isinstance(n, ast.For) else []
            if isinstance(n, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                gens = [(g.target, g.iter) for g in n.generators]
            for target, it in gens:
                src = it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) else it
                keys = self.constants.get(_head(src)) if isinstance(src, ast.Name | ast.Attribute) else None
                first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
                if isinstance(first, ast.Name) and keys is not None:
                    out[first.id] = keys
        return out

    def _key(self, key: ast.expr | None, loops: dict[str, list[str]]) -> set[str]:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return {key.value}
        if isinstance(key, ast.Name) and key.id in loops:
            return set(loops[key.id])
        return {_WILD}

    def _node_writes(self, n: ast.AST, names: set[str], loops: dict[str, list[str]], depth: int) -> set[str]:
        def mine(e: ast.expr) -> bool:
            return isinstance(e, ast.Name) and e.id in names

        out: set[str] = set()
        targets: list[ast.expr] = []
        if isinstance(n, ast.Assign | ast.Delete):
            targets = list(n.targets)
        elif isinstance(n, ast.AugAssign | ast.AnnAssign):
            targets = [n.target]
            if isinstance(n, ast.AugAssign) and mine(n.target):
                out.add(_WILD)  # `data |= other`
        for t in targets:
            if isinstance(t, ast.Subscript) and mine(t.value):
                out |= self._key(t.slice, loops)
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and mine(f.value) and f.attr in _MUTATORS:
                if f.attr == "update":
                    d = n.args[0] if n.args else None
                    if isinstance(d, ast.Dict) and all(k is not None for k in d.keys):
                        for k in d.keys:
                            out |= self._key(k, loops)
                    elif d is not None:
                        out.add(_WILD)
                    out |= {k.arg for k in n.keywords if k.arg} | (
                        {_WILD} if any(not k.arg for k in n.keywords) else set()
                    )
                else:
                    out |= self._key(n.args[0] if n.args else None, loops)
            for i, a in enumerate(n.args):
                if mine(a) and not (isinstance(f, ast.Name) and f.id in _SAFE_CALLS):
                    out |= self._call(f, i, depth)
            if any(mine(k.value) for k in n.keywords):
                out.add(_WILD)
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict):
            for k in n.value.keys:
                if k is not None:
                    out |= self._key(k, loops)
        elif isinstance(n, ast.Return) and n.value is not None and not _passes(n.value, mine):
            out.add(_WILD)  # a value built some other way
        return out

    def _call(self, f: ast.expr, index: int, depth: int) -> set[str]:
        """The keys a function the dict is handed to writes (every definition of that name read)."""
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        defs = self.functions.get(name or "")
        if not defs:
            return {_WILD}
        out: set[str] = set()
        for d in defs:
            out |= self.writes(d, index, depth + 1)
        return out


def _copy_of(v: ast.expr, names: set[str]) -> bool:
    """`data`, `dict(data)`, `data.copy()`, `deepcopy(data)`, `{**data}`: the input dict or a copy."""
    if isinstance(v, ast.Name):
        return v.id in names
    if isinstance(v, ast.Call):
        f = v.func
        if isinstance(f, ast.Attribute) and f.attr == "copy" and not v.args:
            return _copy_of(f.value, names)
        return (
            _head(f) in ("dict", "deepcopy", "copy", "DictDefault") and len(v.args) == 1 and _copy_of(v.args[0], names)
        )
    if isinstance(v, ast.Dict):
        return any(k is None and _copy_of(e, names) for k, e in zip(v.keys, v.values, strict=True))
    return False


def _passes(value: ast.expr, mine: Any) -> bool:
    """A returned value that is the input (or an alias), None, or what a function read here returns."""
    if isinstance(value, ast.Name) or (isinstance(value, ast.Constant) and value.value is None):
        return True  # (a local built from the input is an alias: its writes are read)
    return isinstance(value, ast.Call) and any(mine(a) for a in value.args)


def _constants(trees: list[ast.Module]) -> dict[str, list[str]]:
    """Module-level names bound to a collection of string constants (a dict's keys)."""
    out: dict[str, list[str]] = {}
    for tree in trees:
        for s in tree.body:
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
                continue
            v = s.value
            if isinstance(v, ast.Call) and _head(v.func) in ("frozenset", "set", "tuple", "list") and v.args:
                v = v.args[0]
            elts = (
                list(v.keys)
                if isinstance(v, ast.Dict)
                else v.elts
                if isinstance(v, ast.List | ast.Tuple | ast.Set)
                else None
            )
            if elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
                out[s.targets[0].id] = [
                    e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
    return out


def rewritten(trees: list[ast.Module], nodes: dict[str, tuple[ast.ClassDef, list[str]]]) -> dict[str, set[str]]:
    """class -> the keys of its own fields that a before-validator of a model holding it may rewrite
    (`*`: any of them)."""
    functions: dict[str, list[ast.FunctionDef]] = {}
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef):
                functions.setdefault(n.name, []).append(n)
    reader = _Reader(functions, _constants(trees))
    own: dict[str, set[str]] = {}
    for cname, (node, _bases) in nodes.items():
        keys: set[str] = set()
        for fn in node.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                keys.add(_WILD)
            if not isinstance(fn, ast.FunctionDef):
                continue
            for dec in fn.decorator_list:
                kind = _is_before(dec)
                if kind == "field" and isinstance(dec, ast.Call):
                    for a in dec.args:
                        keys |= {a.value} if isinstance(a, ast.Constant) and isinstance(a.value, str) else {_WILD}
                elif kind == "model":
                    keys |= reader.writes(fn, 0)
        own[cname] = keys

    seen: dict[str, set[str]] = {}

    def ancestors(name: str, depth: int = 0) -> set[str]:
        found = nodes.get(name)
        if found is None or depth > 20:
            return set()
        if name not in seen:  # (a diamond of mixins is walked once; a cycle stops at the depth)
            seen[name] = {name}.union(*(ancestors(b, depth + 1) for b in found[1]))
        return seen[name]

    out: dict[str, set[str]] = {c: set() for c in nodes}
    for model in nodes:
        anc = ancestors(model)
        held: set[str] = set().union(*(own.get(c, set()) for c in anc))
        for c in anc:
            out[c] |= held
    return out


def _strings(v: ast.expr, local: dict[str, list[str]]) -> list[str] | None:
    """The string constants of a list/tuple/set display, or of a name bound to one."""
    if isinstance(v, ast.Name):
        return local.get(v.id)
    ok = isinstance(v, ast.List | ast.Tuple | ast.Set) and bool(v.elts)
    if ok and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in getattr(v, "elts", [])):
        return [str(e.value) for e in getattr(v, "elts", []) if isinstance(e, ast.Constant)]
    return None


def _given_of(v: ast.expr, data: str, consts: dict[str, list[str]]) -> list[str] | None:
    """The constants of `[f for f in CONSTANTS if data.get(f)]` (the given ones of them), else None."""
    if not (isinstance(v, ast.ListComp) and len(v.generators) == 1 and isinstance(v.elt, ast.Name)):
        return None
    g = v.generators[0]
    keys = _strings(g.iter, consts)
    if not (isinstance(g.target, ast.Name) and keys and len(g.ifs) == 1 and not g.is_async):
        return None
    return keys if _got_key(g.ifs[0], data, {g.target.id: keys}) else None


def _got_key(test: ast.expr, data: str, loop: dict[str, list[str]]) -> list[str] | None:
    """The keys a test is true for by their presence alone: `data.get("k")`, `data.get(f)` for `f` of a
    loop over constants, `"k" in data`, `data.get("k") is not None`."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.In) and isinstance(right, ast.Name) and right.id == data:
            key = test.left
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return [key.value]
            return loop.get(key.id) if isinstance(key, ast.Name) else None
        if isinstance(op, ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
            return _got_key(test.left, data, loop)
        return None
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "get"):
        return None
    if not (isinstance(test.func.value, ast.Name) and test.func.value.id == data) or len(test.args) != 1:
        return None
    key = test.args[0]
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return [key.value]
    return loop.get(key.id) if isinstance(key, ast.Name) else None


def _raises(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[0], ast.Raise)


def raised_keys(trees: list[ast.Module]) -> dict[str, str]:
    """key -> the name of a before model-validator that raises whenever the key is given (truthy): a
    removed key that stops the job rather than being dropped (axolotl 0.19's `check_deprecated_unsloth_fields`:
    `found = [f for f in [...] if data.get(f)]` then `if found: raise ValueError(...)`; or `if data.get("k"):
    raise`). Only a test at the validator's top level whose truth depends on the key alone counts."""
    out: dict[str, str] = {}
    for tree in trees:
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or not any(_is_before(d) == "model" for d in fn.decorator_list):
                continue
            args = [a.arg for a in fn.args.args if a.arg not in ("cls", "self")]
            if not args:
                continue
            data = args[0]
            consts: dict[str, list[str]] = {}
            found: dict[str, list[str]] = {}  # a local list of the given keys of some constants
            for s in fn.body:
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                    name, v = s.targets[0].id, s.value
                    if _strings(v, consts) is not None:
                        consts[name] = _strings(v, consts) or []
                    elif _given_of(v, data, consts):
                        found[name] = _given_of(v, data, consts) or []
                elif isinstance(s, ast.If) and _raises(s.body):
                    keys = found.get(s.test.id) if isinstance(s.test, ast.Name) else _got_key(s.test, data, {})
                    for k in keys or []:
                        out.setdefault(k, fn.name)
                if any(isinstance(n, ast.Return) for n in ast.walk(s)):
                    break  # (a validator that may return before its later tests: those are conditional)
    return out
