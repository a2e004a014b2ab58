"""The compiled rule table cached as inert JSON data (never pickle: a cache file must not be able to
run code, docs/security.md).

Compiling `rules/*.toml` (TOML, pydantic validation, the condition compiler) costs ~150 ms; reading
this file back costs a few. The file is a tree of plain JSON values in which a compiled object is a
tagged list naming its class by index into a class table; a class is looked up only among the
compiled-table classes of a fixed set of packlint modules, and its fields must be exactly the ones the
running code declares. An object is rebuilt with `object.__new__` and its fields set one by one: no
constructor, `__reduce__` or `__setstate__` runs, so the worst a hostile file can do is describe a
wrong table — and the file is read only when it is a regular file owned by the user (safe_io), under
a key that hashes the rule files and packlint's own modules.

Format (`"format": "packlint-rule-table"`, `"version": DATA_VERSION`):
    value := null | true | false | number | string
           | ["l", value...]               a list
           | ["p", [plain...]]             a list of null, booleans, numbers and strings only
           | ["t", value...]               a tuple
           | ["q", [plain...]]             a tuple of plain values only
           | ["d", [key...], [value...]]   a dict
           | ["f", value...]               a frozenset
           | ["o", class, value...]        an object: its fields in the class table's order
           | ["r", index]                  the shared object `index` (an object met more than once)
           | ["z", text]                   a field kept as JSON text (a value of this format), decoded
                                           on first use: only in a field the class lists in
                                           `_cache_lazy` (a rule's messages and documentation)
    classes: [[module, name, [field...]], ...]
    shared:  [["o", class, value...], ...]   built first (empty), then filled: identity is kept
    root:    value
A field whose name starts with `_` is a memo (a compiled regex): stored as null.

Lazy fields: `packlint check` needs every rule's condition but a rule's messages, locations, fix and
documentation only when it fires (or for `explain` / the reporters' rule metadata): they are three
quarters of the file. A class that lists fields in `_cache_lazy` gets them as JSON text: the object
keeps a `Pending` under `_cache_pending` and its own `__getattr__` decodes a field on first access,
with the same class checks as the rest. A lazy field that turns out malformed is taken from a fresh
compile of the rule files (`fallback`), so a damaged cache never changes a finding.
"""

from __future__ import annotations

import json
from itertools import repeat
from typing import Any

FORMAT = "packlint-rule-table"
DATA_VERSION = 3  # 2: lazy fields ("z"); 3: references point forward, expansion bounded, field types checked

# the modules whose classes a cached table may name (and only classes defined in them)
ALLOWED_MODULES = (
    "packlint.rule_table",
    "packlint.conditions.tree",
    "packlint.conditions.compile",
    "packlint.conditions.functions.core",
    "packlint.conditions.functions.derived",
    "packlint.conditions.functions.codebase",
    "packlint.conditions.functions.codebase_env",
    "packlint.conditions.functions.codebase_common",
    "packlint.conditions.functions.stack_keys",
    "packlint.conditions.functions.stack_config_keys",
    "packlint.regex",
)


class CacheFormatError(Exception):
    """The cache file is not a table this code can use (wrong shape, class or field): rebuild it."""


_PRIMITIVES = (str, int, float, bool, type(None))


def _fields(cls: type) -> list[str]:
    named = getattr(cls, "_fields", None)  # an @record
    if isinstance(named, tuple):
        return list(named)
    slots: list[str] = []
    for c in reversed(cls.__mro__):
        s = c.__dict__.get("__slots__", ())
        for name in (s,) if isinstance(s, str) else s:
            if name not in ("__dict__", "__weakref__") and name not in slots:
                slots.append(name)
    return slots


def _allowed(module: str, name: str) -> type | None:
    import sys

    if module not in ALLOWED_MODULES:
        return None
    mod = sys.modules.get(module)
    if mod is None:
        import importlib

        try:
            mod = importlib.import_module(module)
        except ImportError:
            return None
    cls = mod.__dict__.get(name)
    if not isinstance(cls, type) or cls.__module__ != module:
        return None
    if any("__new__" in c.__dict__ for c in cls.__mro__[:-1]) or issubclass(cls, BaseException):
        return None  # (rebuilt with object.__new__ only)
    return cls


class Pending:
    """The lazy fields of one object, as JSON text, and how to decode them (see the module doc)."""

    __slots__ = ("texts", "decode", "fallback")

    def __init__(self, texts: dict[str, str], decode: Any, fallback: Any) -> None:
        self.texts, self.decode, self.fallback = texts, decode, fallback

    def get(self, obj: Any, name: str) -> Any:
        """The decoded field `name` of `obj` (stored on it), or AttributeError when it is not pending."""
        text = self.texts.get(name)
        if text is None:
            raise AttributeError(name)
        try:
            value = self.decode(text)
            check = dict(_type_checks(type(obj))).get(name)
            if check is not None and not _holds(check, value):
                raise CacheFormatError(f"{type(obj).__name__}.{name}: a value of the wrong type")
        except CacheFormatError:
            if self.fallback is None:
                raise
            value = self.fallback(obj, name)
        obj.__dict__[name] = value
        return value


def _lazy_fields(cls: type) -> frozenset[str]:
    lazy = cls.__dict__.get("_cache_lazy", ())
    return frozenset(lazy) if isinstance(lazy, tuple) and "__slots__" not in cls.__dict__ else frozenset()


# ---------------------------------------------------------------------------------------------- types
# Every field of a rebuilt object is checked, as it is set, against the type its class declares (an @record's
# annotations, or a slotted class's __init__ parameters): a planted `severity: 5` or `when: null` is
# a malformed table (a miss), never an internal error later (R17). `_cache_values` on a class names
# the values a str field may take.

_Check = Any  # Callable[[Any], bool] | None (None: anything)
_CHECKS: dict[type, list[tuple[str, _Check]]] = {}
_SCALARS: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "float": (float, int), "bool": (bool,)}


def _is_none(v: Any) -> bool:
    return v is None


def _split_top(text: str, sep: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()]


def _checker(ann: str, scope: dict[str, Any]) -> _Check:
    """A check for the annotation text `ann` (names resolved in `scope`): a tuple of classes (the
    common case, tested with one isinstance call), a predicate, or None (no constraint)."""
    alts = _split_top(ann, "|")
    simple: list[type] = []
    for alt in alts:
        if alt in _SCALARS:
            simple.extend(_SCALARS[alt])
            continue
        cls = type(None) if alt == "None" else scope.get(alt)
        if "[" in alt or not isinstance(cls, type) or cls.__module__ == "typing":
            break
        simple.append(cls)
    else:
        return tuple(simple)
    checks: list[Any] = []
    return _predicate(alts, scope, checks)


def _holds(check: Any, value: Any) -> bool:
    return isinstance(value, check) if type(check) is tuple else check(value)


def _predicate(alts: list[str], scope: dict[str, Any], checks: list[Any]) -> _Check:
    for alt in alts:
        if alt == "None":
            checks.append(_is_none)
            continue
        if alt in ("Any", "object", "typing.Any"):
            return None
        head, _, rest = alt.partition("[")
        raw_args = [_checker(a, scope) for a in _split_top(rest[:-1], ",")] if rest else []
        args = [_as_predicate(a) for a in raw_args]
        if head in _SCALARS:
            kinds = _SCALARS[head]
            checks.append(lambda v, k=kinds: type(v) in k)
        elif head in ("list", "frozenset", "set") or (head == "tuple" and rest.endswith("...]")):
            kind = {"list": list, "frozenset": frozenset, "set": set, "tuple": tuple}[head]
            item = args[0] if args else None
            if raw_args and type(raw_args[0]) is tuple:  # (items of given classes: a loop in C)
                checks.append(lambda v, k=kind, c=raw_args[0]: type(v) is k and all(map(isinstance, v, repeat(c))))
            else:
                checks.append(lambda v, k=kind, c=item: type(v) is k and (c is None or all(c(x) for x in v)))
        elif head == "tuple":
            checks.append(
                lambda v, cs=args: (
                    type(v) is tuple
                    and len(v) == len(cs)
                    and all(c is None or c(x) for c, x in zip(cs, v, strict=True))
                )
            )
        elif head == "dict":
            kc, vc = (args + [None, None])[:2]
            checks.append(
                lambda v, kc=kc, vc=vc: (
                    type(v) is dict and all((kc is None or kc(k)) and (vc is None or vc(x)) for k, x in v.items())
                )
            )
        else:
            cls = scope.get(head)
            if not isinstance(cls, type) or cls.__module__ == "typing":
                return None  # (Any, a name only imported for type checking: unconstrained)
            checks.append(lambda v, c=cls: isinstance(v, c))
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda v: a(v) or b(v)
    return lambda v: any(c(v) for c in checks)


def _as_predicate(check: _Check) -> _Check:
    if type(check) is tuple:
        return lambda v, c=check: isinstance(v, c)
    return check


def _type_checks(cls: type) -> list[tuple[str, _Check]]:
    """(field, predicate) for each field of `cls` whose declared type can be checked."""
    found = _CHECKS.get(cls)
    if found is not None:
        return found
    import sys

    anns: dict[str, str] = {}
    if isinstance(getattr(cls, "_fields", None), tuple):  # an @record: its annotations
        for c in reversed(cls.__mro__):
            anns.update(c.__dict__.get("__annotations__", {}))
    else:  # a slotted class: its constructor's parameters (`type_` sets the field `type`)
        for c in reversed(cls.__mro__):
            init = c.__dict__.get("__init__")
            for name, ann in getattr(init, "__annotations__", {}).items():  # (not `inspect`: 5 ms of imports)
                if name != "return":
                    anns[name.rstrip("_")] = ann
    scope = {**vars(sys.modules[cls.__module__]), **_scope_extra()}
    values = getattr(cls, "_cache_values", {})
    out = []
    for name in _fields(cls):
        if name.startswith("_") or not isinstance(anns.get(name), str):
            continue
        check = _checker(anns[name], scope)
        allowed = values.get(name)
        if allowed is not None:
            check = lambda v, c=check, a=allowed: v in a and (c is None or _holds(c, v))  # noqa: E731
        if check is not None:
            out.append((name, check))
    _CHECKS[cls] = out
    return out


def _scope_extra() -> dict[str, Any]:
    """Names the annotations use that their modules import only for type checking."""
    from packlint.conditions.compile import Template
    from packlint.conditions.tree import Expr, PredicateBody

    return {"Template": Template, "Expr": Expr, "PredicateBody": PredicateBody}


class _Encoder:
    """`dumps`' state: how often each object is met (objects met twice are stored once, as shared)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.keep: list[Any] = []  # (ids stay valid while the objects are alive)
        self.classes: list[list[Any]] = []
        self.class_index: dict[type, int] = {}
        self.shared_index: dict[int, int] = {}
        self.shared: list[Any] = []
        self.lazy_of: dict[type, frozenset[str]] = {}

    def count(self, v: Any) -> None:
        t = type(v)
        if t in _PRIMITIVES:
            return
        if t in (list, tuple, frozenset):
            for x in v:
                self.count(x)
            return
        if t is dict:
            for k, x in v.items():
                self.count(k)
                self.count(x)
            return
        n = self.counts.get(id(v), 0)
        self.counts[id(v)] = n + 1
        if n:
            return
        self.keep.append(v)
        for f in _fields(t):
            if not f.startswith("_"):
                self.count(getattr(v, f, None))

    def obj(self, v: Any) -> list[Any]:
        t = type(v)
        i = self.class_index.get(t)
        if i is None:
            if _allowed(t.__module__, t.__name__) is not t:
                raise CacheFormatError(f"class {t.__module__}.{t.__name__} cannot be cached")
            i = self.class_index[t] = len(self.classes)
            self.classes.append([t.__module__, t.__name__, _fields(t)])
        lazy = self.lazy_of.get(t)
        if lazy is None:
            lazy = self.lazy_of[t] = _lazy_fields(t)
        return ["o", i, *(None if f.startswith("_") else self.field(v, f, f in lazy) for f in self.classes[i][2])]

    def field(self, v: Any, f: str, lazy: bool) -> Any:
        x = self.enc(getattr(v, f, None))
        if lazy and type(x) is list:  # (a plain value costs nothing to decode: kept as it is)
            return ["z", json.dumps(x, separators=(",", ":"), allow_nan=False)]
        return x

    def enc(self, v: Any) -> Any:
        t = type(v)
        if t in _PRIMITIVES:
            return v
        if t is list or t is tuple:
            plain = all(type(x) in _PRIMITIVES for x in v)
            if plain:
                return ["p" if t is list else "q", list(v)]
            return ["l" if t is list else "t", *map(self.enc, v)]
        if t is frozenset:
            return ["f", *map(self.enc, v)]
        if t is dict:
            return ["d", [self.enc(k) for k in v], [self.enc(x) for x in v.values()]]
        if self.counts.get(id(v), 0) > 1:
            i = self.shared_index.get(id(v))
            if i is None:  # (its index comes before those of the objects it holds: see _Decoder)
                i = self.shared_index[id(v)] = len(self.shared)
                self.shared.append(None)
                self.shared[i] = self.obj(v)
            return ["r", i]
        return self.obj(v)


def dumps(root: Any) -> str:
    """Encode a compiled table (raises CacheFormatError for a value this format cannot hold)."""
    e = _Encoder()
    e.count(root)
    body = e.enc(root)
    doc = {"format": FORMAT, "version": DATA_VERSION, "classes": e.classes, "shared": e.shared, "root": body}
    try:
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError) as exc:
        raise CacheFormatError(str(exc)) from None


# the most nodes a table may expand to when its shared objects are counted once per reference: the
# conditions are evaluated as trees, so a planted DAG (`Or(x, x)` nested 60 deep: 2^60 evaluations,
# R16) must be refused at load. The real table expands to ~6,000; a million is far from both.
MAX_EXPANDED = 1_000_000


_Spec = tuple  # (class, fields, is_record, lazy fields, [check or None per field], [(index, check)])


class _Decoder:
    """`loads`' state: the class table, the shared objects, and the references each one holds.

    Decoding is linear in the file (a shared object is decoded once); what can blow up is evaluating
    it, since conditions are evaluated as trees: a shared object met through k references counts k
    times. So while decoding, the references inside each shared object (and inside the root, and
    inside a lazy field's text) are collected, and the expanded count of shared objects is checked
    against MAX_EXPANDED; a shared object that holds itself, directly or not, is refused (a cycle).
    Every field is checked against its declared type as it is set (`_type_checks`, R17)."""

    def __init__(self, classes: list[_Spec], fallback: Any) -> None:
        self.classes = classes
        self.fallback = fallback
        self.shared: list[Any] = []
        self.refs: list[int] = []  # references met in the object being decoded
        self.held: list[list[int]] = []  # per shared object: the references it holds
        self.weights: list[int | None] = []

    def expanded(self, refs: list[int]) -> int:
        """How many shared objects `refs` stand for once every reference is expanded (capped)."""
        total = 0
        for j in refs:
            total += self.weight(j)
            if total > MAX_EXPANDED:
                raise CacheFormatError("the table expands to too many nodes")
        return total

    def weight(self, i: int) -> int:
        w = self.weights[i]
        if w is None:
            raise CacheFormatError("a shared object holds itself")
        if w < 0:
            self.weights[i] = None
            w = self.weights[i] = 1 + self.expanded(self.held[i])
        return w

    def fill(self, inst: Any, spec: _Spec, node: list) -> Any:
        values = node[2:]
        if len(values) != len(spec[1]):
            raise CacheFormatError(f"{spec[0].__name__}: wrong number of fields")
        if spec[3]:
            return self.fill_lazy(inst, spec, values)
        dec = self.dec
        # (a plain value is taken as is, without a call: most fields are strings, numbers or None)
        vals = [x if type(x) is not list else dec(x) for x in values]
        for i, check in spec[5]:
            v = vals[i]
            if not (isinstance(v, check) if type(check) is tuple else check(v)):
                raise CacheFormatError(f"{spec[0].__name__}.{spec[1][i]}: a value of the wrong type")
        if spec[2]:
            inst.__dict__.update(zip(spec[1], vals, strict=True))
        else:
            setattr_ = object.__setattr__
            for f, x in zip(spec[1], vals, strict=True):
                setattr_(inst, f, x)
        return inst

    def fill_lazy(self, inst: Any, spec: _Spec, values: list) -> Any:
        """`fill` for a class with lazy fields (a Rule): those stay JSON text until first read."""
        d = inst.__dict__
        texts: dict[str, str] = {}
        for f, x, check in zip(spec[1], values, spec[4], strict=True):
            if type(x) is list:
                if x[0] == "z" and f in spec[3]:
                    if len(x) != 2 or type(x[1]) is not str:
                        raise CacheFormatError("bad lazy field")
                    texts[f] = x[1]
                    continue
                x = self.dec(x)
            if check is not None and not (isinstance(x, check) if type(check) is tuple else check(x)):
                raise CacheFormatError(f"{spec[0].__name__}.{f}: a value of the wrong type")
            d[f] = x
        if texts:
            d["_cache_pending"] = Pending(texts, self.decode_text, self.fallback)
        return inst

    def dec(self, v: Any) -> Any:
        if type(v) is not list:
            return v
        tag = v[0]
        if tag == "o":
            spec = self.classes[v[1]]
            return self.fill(object.__new__(spec[0]), spec, v)
        if tag == "p":  # a list of plain values (fresh from json.loads: no copy)
            return _plain(v[1])
        if tag == "r":
            if len(v) != 2 or type(v[1]) is not int or not 0 <= v[1] < len(self.shared):
                raise CacheFormatError("bad shared reference")
            self.refs.append(v[1])
            return self.shared[v[1]]
        if tag == "l":
            return [x if type(x) is not list else self.dec(x) for x in v[1:]]
        if tag == "q":
            return tuple(_plain(v[1]))
        if tag == "t":
            return tuple([x if type(x) is not list else self.dec(x) for x in v[1:]])
        if tag == "d":
            return {
                (k if type(k) is not list else self.dec(k)): (x if type(x) is not list else self.dec(x))
                for k, x in zip(v[1], v[2], strict=True)
            }
        if tag == "f":
            return frozenset(self.dec(x) for x in v[1:])
        raise CacheFormatError(f"unknown tag {tag!r}")

    def decode_text(self, text: str) -> Any:
        try:
            self.refs = []
            value = self.dec(json.loads(text))
            self.expanded(self.refs)
            return value
        except (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError) as exc:
            raise CacheFormatError(f"malformed: {exc}") from None

    def decode(self, raw_shared: list, root: Any) -> Any:
        for node in raw_shared:  # every shared object exists (empty) before any field refers to it
            if not (type(node) is list and len(node) >= 2 and node[0] == "o"):
                raise CacheFormatError("bad shared object")
            self.shared.append(object.__new__(self.classes[node[1]][0]))
        for inst, node in zip(self.shared, raw_shared, strict=True):
            self.refs = []
            self.fill(inst, self.classes[node[1]], node)
            self.held.append(self.refs)
        self.weights = [-1] * len(raw_shared)
        self.refs = []
        value = self.dec(root)
        self.expanded(self.refs)
        for i in range(len(raw_shared)):  # (a cycle no reference from the root reaches is refused too)
            self.weight(i)
        return value


_IS_PRIMITIVE = frozenset(_PRIMITIVES).__contains__


def _plain(values: Any) -> Any:
    if type(values) is not list or not all(map(_IS_PRIMITIVE, map(type, values))):  # (C loops)
        raise CacheFormatError("bad plain list")
    return values


def _class_table(raw_classes: Any) -> list[_Spec]:
    if not isinstance(raw_classes, list):
        raise CacheFormatError("no class table")
    classes: list[_Spec] = []
    for entry in raw_classes:
        if not (isinstance(entry, list) and len(entry) == 3 and all(isinstance(x, str) for x in entry[:2])):
            raise CacheFormatError("bad class entry")
        cls = _allowed(entry[0], entry[1])
        if cls is None:
            raise CacheFormatError(f"class {entry[0]}.{entry[1]} is not a rule-table class")
        if entry[2] != _fields(cls):
            raise CacheFormatError(f"class {entry[1]} has other fields now")
        checks = dict(_type_checks(cls))
        spec = (cls, entry[2], isinstance(getattr(cls, "_fields", None), tuple), _lazy_fields(cls))
        per_field = [checks.get(f) for f in entry[2]]
        classes.append((*spec, per_field, [(i, c) for i, c in enumerate(per_field) if c is not None]))
    return classes


def loads(data: bytes, fallback: Any = None) -> Any:
    """Decode what `dumps` wrote; anything else raises CacheFormatError. `fallback(obj, field)`: the
    value of a lazy field whose text turns out malformed when it is first used (else that raises)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CacheFormatError(f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != DATA_VERSION:
        raise CacheFormatError("not a packlint rule-table cache of this version")
    raw_shared = doc.get("shared")
    if not isinstance(raw_shared, list):
        raise CacheFormatError("no shared table")
    decoder = _Decoder(_class_table(doc.get("classes")), fallback)
    try:
        return decoder.decode(raw_shared, doc.get("root"))
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, RecursionError) as exc:
        raise CacheFormatError(f"malformed: {exc}") from None
