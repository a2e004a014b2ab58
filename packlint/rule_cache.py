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
from typing import Any

FORMAT = "packlint-rule-table"
DATA_VERSION = 2  # 2: lazy fields ("z")

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
        except CacheFormatError:
            if self.fallback is None:
                raise
            value = self.fallback(obj, name)
        obj.__dict__[name] = value
        return value


def _lazy_fields(cls: type) -> frozenset[str]:
    lazy = cls.__dict__.get("_cache_lazy", ())
    return frozenset(lazy) if isinstance(lazy, tuple) and "__slots__" not in cls.__dict__ else frozenset()


def dumps(root: Any) -> str:
    """Encode a compiled table (raises CacheFormatError for a value this format cannot hold)."""
    counts: dict[int, int] = {}
    keep: list[Any] = []  # (ids stay valid while the objects are alive)

    def count(v: Any) -> None:
        t = type(v)
        if t in _PRIMITIVES:
            return
        if t in (list, tuple, frozenset):
            for x in v:
                count(x)
            return
        if t is dict:
            for k, x in v.items():
                count(k)
                count(x)
            return
        n = counts.get(id(v), 0)
        counts[id(v)] = n + 1
        if n:
            return
        keep.append(v)
        for f in _fields(t):
            if not f.startswith("_"):
                count(getattr(v, f, None))

    count(root)
    classes: list[list[Any]] = []
    class_index: dict[type, int] = {}
    shared_index: dict[int, int] = {}
    shared: list[Any] = []
    lazy_of: dict[type, frozenset[str]] = {}

    def obj(v: Any) -> list[Any]:
        t = type(v)
        i = class_index.get(t)
        if i is None:
            if _allowed(t.__module__, t.__name__) is not t:
                raise CacheFormatError(f"class {t.__module__}.{t.__name__} cannot be cached")
            i = class_index[t] = len(classes)
            classes.append([t.__module__, t.__name__, _fields(t)])
        lazy = lazy_of.get(t)
        if lazy is None:
            lazy = lazy_of[t] = _lazy_fields(t)
        return ["o", i, *(None if f.startswith("_") else field(v, f, f in lazy) for f in classes[i][2])]

    def field(v: Any, f: str, lazy: bool) -> Any:
        x = enc(getattr(v, f, None))
        if lazy and type(x) is list:  # (a plain value costs nothing to decode: kept as it is)
            return ["z", json.dumps(x, separators=(",", ":"), allow_nan=False)]
        return x

    def enc(v: Any) -> Any:
        t = type(v)
        if t in _PRIMITIVES:
            return v
        if t is list:
            if all(type(x) in _PRIMITIVES for x in v):
                return ["p", v]
            return ["l", *map(enc, v)]
        if t is tuple:
            if all(type(x) in _PRIMITIVES for x in v):
                return ["q", list(v)]
            return ["t", *map(enc, v)]
        if t is frozenset:
            return ["f", *map(enc, v)]
        if t is dict:
            return ["d", [enc(k) for k in v], [enc(x) for x in v.values()]]
        if counts.get(id(v), 0) > 1:
            i = shared_index.get(id(v))
            if i is None:
                i = shared_index[id(v)] = len(shared)
                shared.append(None)
                shared[i] = obj(v)
            return ["r", i]
        return obj(v)

    body = enc(root)
    doc = {"format": FORMAT, "version": DATA_VERSION, "classes": classes, "shared": shared, "root": body}
    try:
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError) as exc:
        raise CacheFormatError(str(exc)) from None


def loads(data: bytes, fallback: Any = None) -> Any:
    """Decode what `dumps` wrote; anything else raises CacheFormatError. `fallback(obj, field)`: the
    value of a lazy field whose text turns out malformed when it is first used (else that raises)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CacheFormatError(f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != DATA_VERSION:
        raise CacheFormatError("not a packlint rule-table cache of this version")
    raw_classes, raw_shared = doc.get("classes"), doc.get("shared")
    if not isinstance(raw_classes, list) or not isinstance(raw_shared, list):
        raise CacheFormatError("no class or shared table")
    classes: list[tuple[type, list[str], bool, frozenset[str]]] = []
    for entry in raw_classes:
        if not (isinstance(entry, list) and len(entry) == 3 and all(isinstance(x, str) for x in entry[:2])):
            raise CacheFormatError("bad class entry")
        cls = _allowed(entry[0], entry[1])
        if cls is None:
            raise CacheFormatError(f"class {entry[0]}.{entry[1]} is not a rule-table class")
        if entry[2] != _fields(cls):
            raise CacheFormatError(f"class {entry[1]} has other fields now")
        classes.append((cls, entry[2], isinstance(getattr(cls, "_fields", None), tuple), _lazy_fields(cls)))
    new = object.__new__
    setattr_ = object.__setattr__
    shared: list[Any] = []

    def fill(inst: Any, spec: tuple[type, list[str], bool, frozenset[str]], node: list) -> Any:
        values = node[2:]
        if len(values) != len(spec[1]):
            raise CacheFormatError(f"{spec[0].__name__}: wrong number of fields")
        # (a plain value is taken as is, without a call: most fields are strings, numbers or None)
        if spec[3]:
            d = inst.__dict__
            texts: dict[str, str] = {}
            for f, x in zip(spec[1], values, strict=True):
                if type(x) is not list:
                    d[f] = x
                elif x[0] == "z" and f in spec[3]:
                    if len(x) != 2 or type(x[1]) is not str:
                        raise CacheFormatError("bad lazy field")
                    texts[f] = x[1]
                else:
                    d[f] = dec(x)
            if texts:
                d["_cache_pending"] = Pending(texts, decode_text, fallback)
        elif spec[2]:
            inst.__dict__.update(zip(spec[1], [x if type(x) is not list else dec(x) for x in values], strict=True))
        else:
            for f, x in zip(spec[1], values, strict=True):
                setattr_(inst, f, x if type(x) is not list else dec(x))
        return inst

    def dec(v: Any) -> Any:
        if type(v) is not list:
            return v
        tag = v[0]
        if tag == "o":
            spec = classes[v[1]]
            return fill(new(spec[0]), spec, v)
        if tag == "p":  # a list of plain values (fresh from json.loads: no copy)
            return v[1]
        if tag == "r":
            return shared[v[1]]
        if tag == "l":
            return [x if type(x) is not list else dec(x) for x in v[1:]]
        if tag == "q":
            return tuple(v[1])
        if tag == "t":
            return tuple([x if type(x) is not list else dec(x) for x in v[1:]])
        if tag == "d":
            return {
                (k if type(k) is not list else dec(k)): (x if type(x) is not list else dec(x))
                for k, x in zip(v[1], v[2], strict=True)
            }
        if tag == "f":
            return frozenset(dec(x) for x in v[1:])
        raise CacheFormatError(f"unknown tag {tag!r}")

    def decode_text(text: str) -> Any:
        try:
            return dec(json.loads(text))
        except (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError) as exc:
            raise CacheFormatError(f"malformed: {exc}") from None

    try:
        for node in raw_shared:  # every shared object exists (empty) before any field refers to it
            if not (type(node) is list and len(node) >= 2 and node[0] == "o"):
                raise CacheFormatError("bad shared object")
            shared.append(new(classes[node[1]][0]))
        for inst, node in zip(shared, raw_shared, strict=True):
            fill(inst, classes[node[1]], node)
        return dec(doc.get("root"))
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, RecursionError) as exc:
        raise CacheFormatError(f"malformed: {exc}") from None
