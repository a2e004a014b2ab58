"""Config files read with their positions: YAML (typed as the stack's loader types it), JSON, TOML.

Every value comes back as a `CNode`: the Python value (dict of CNode, list of CNode, or a scalar:
bool/int/float/str/None) and the span of the text that set it. Nothing here imports OmegaConf or
Hydra or constructs a Python object from YAML: the text is *composed* into a node tree that keeps
line and column (by PyYAML's C composer, libyaml, where it gives the tree ruamel.yaml's composer
gives; by ruamel.yaml's otherwise: _compose_libyaml), and its plain scalars are resolved by packlint,
in the dialect the stack's own loader uses:

- `pyyaml`: PyYAML's SafeLoader (YAML 1.1: `yes`/`on`/`off` are booleans, `1e-5` is a string);
  the loader of TRL (`yaml.safe_load`), axolotl, ms-swift, accelerate.
- `omegaconf`: OmegaConf's loader (`omegaconf/_utils.py` `get_yaml_loader`, omegaconf 2.3): SafeLoader
  plus a float resolver that reads `1e-5` as a float, and no timestamps; used by LLaMA-Factory
  (`OmegaConf.load`), Hydra (verl), Megatron-Bridge and NeMo-RL.
- `yaml12`: YAML 1.2 core schema (ruamel's own default), for loaders that use ruamel.
- `json`: Python's json module.

Files are bounded (MAX_CONFIG_BYTES, MAX_DEPTH, MAX_NODES, and for YAML read by ruamel's pure-Python
composer MAX_PURE_YAML_TOKENS, counted on the text before composing: audit R10); a malformed file raises
ConfigFileError with the file and line, never a parser traceback. A file over one of packlint's own bounds
(one its stack would read) raises ConfigLimitError: its values are unknown, with an info (PK603), not PK602.
"""

from __future__ import annotations

import math
import re
from typing import Any

from packlint.regex import LazyRegex

MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 200_000
# ruamel's composer (pure Python) reads ~5,000-20,000 tokens a second: past this many line breaks and
# flow indicators the file is not composed (libyaml's C composer takes the common files, up to MAX_NODES)
MAX_PURE_YAML_TOKENS = 16_384


class ConfigFileError(Exception):
    """A config file that cannot be used. `unread`: it was not read at all (outside the checkout, not a
    regular file, unreadable): its values are unknown, which is no finding about the file itself."""

    def __init__(self, message: str, line: int = 1, column: int = 1, *, unread: bool = False) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column
        self.unread = unread


class ConfigLimitError(ConfigFileError):
    """The file is over one of packlint's own bounds (size, nodes, nesting, key length): not an error of
    the file, whose values are then unknown."""


class CNode:
    """One value of a config file and where it was written (1-based line/column, end exclusive)."""

    __slots__ = ("value", "line", "column", "end_line", "end_column")

    def __init__(self, value: Any, line: int, column: int, end_line: int, end_column: int) -> None:
        self.value, self.line, self.column, self.end_line, self.end_column = value, line, column, end_line, end_column

    def plain(self) -> Any:
        """The value without positions (dicts and lists of plain values)."""
        v = self.value
        if isinstance(v, dict):
            return {k: n.plain() for k, n in v.items()}
        if isinstance(v, list):
            return [n.plain() for n in v]
        return v

    def __repr__(self) -> str:
        return f"CNode({self.value!r}@{self.line}:{self.column})"


# ---------------------------------------------------------------------------------------------- scalars

_BOOL11 = {
    "yes": True, "Yes": True, "YES": True, "no": False, "No": False, "NO": False,
    "true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False,
    "on": True, "On": True, "ON": True, "off": False, "Off": False, "OFF": False,
}  # fmt: skip
_NULL = {"", "~", "null", "Null", "NULL"}
# PyYAML 6 resolver.py (Resolver's implicit resolvers), verbatim
_INT11 = LazyRegex(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""",
    re.X,
)
_FLOAT11 = LazyRegex(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
# omegaconf 2.3 _utils.get_yaml_loader: the float resolver it adds (accepts 1e-5, 1_000.5)
_FLOAT_OMEGA = LazyRegex(
    r"""^(?:[-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
    |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_TIMESTAMP = LazyRegex(
    r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
    (?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
    (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
    re.X,
)
# YAML 1.2 core schema
_BOOL12 = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT12 = LazyRegex(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT12 = LazyRegex(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def _construct_int11(text: str) -> int:
    # PyYAML SafeConstructor.construct_yaml_int
    value = text.replace("_", "")
    sign = 1
    if value[0] == "-":
        sign = -1
    if value[0] in "+-":
        value = value[1:]
    if value == "0":
        return 0
    if value.startswith("0b"):
        return sign * int(value[2:], 2)
    if value.startswith("0x"):
        return sign * int(value[2:], 16)
    if value[0] == "0":
        return sign * int(value, 8)
    if ":" in value:
        digits = [int(part) for part in value.split(":")]
        digits.reverse()
        base, total = 1, 0
        for d in digits:
            total += d * base
            base *= 60
        return sign * total
    return sign * int(value)


def _construct_float11(text: str) -> float:
    # PyYAML SafeConstructor.construct_yaml_float
    value = text.replace("_", "").lower()
    sign = 1.0
    if value[0] == "-":
        sign = -1.0
    if value[0] in "+-":
        value = value[1:]
    if value == ".inf":
        return sign * math.inf
    if value == ".nan":
        return math.nan
    if ":" in value:
        digits = [float(part) for part in value.split(":")]
        digits.reverse()
        base, total = 1.0, 0.0
        for d in digits:
            total += d * base
            base *= 60
        return sign * total
    return sign * float(value)


def resolve_plain(text: str, dialect: str) -> Any:
    """A plain (unquoted) YAML scalar as the dialect's loader types it."""
    if dialect == "yaml12":
        if text in _NULL:
            return None
        if text in _BOOL12:
            return _BOOL12[text]
        if _INT12.match(text):
            return int(text, 0) if text[:2] in ("0o", "0x") else int(text)
        if _FLOAT12.match(text):
            low = text.lower()
            return math.nan if low.endswith("nan") else (float(low.replace(".inf", "inf")))
        return text
    if text in _NULL:
        return None
    if text in _BOOL11:
        return _BOOL11[text]
    if _INT11.match(text):
        return _construct_int11(text)
    if (_FLOAT_OMEGA if dialect == "omegaconf" else _FLOAT11).match(text):
        return _construct_float11(text)
    if dialect == "pyyaml" and _TIMESTAMP.match(text):
        return text  # a datetime in PyYAML; kept as its text (rules compare text)
    return text


# ---------------------------------------------------------------------------------------------- YAML


def _yaml_error(exc: Exception) -> ConfigFileError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return ConfigFileError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1)
    return ConfigFileError(f"invalid YAML: {problem}")


def load_yaml(text: str, dialect: str = "pyyaml") -> CNode:
    """The document's root node (an empty document is an empty mapping's None value)."""
    # counted on the text before any composer runs: each `key: value`, `- item` and flow `,` is at least
    # one value (text inside a scalar can only add to the count of a file this large)
    entries = text.count(": ") + text.count(":\n") + text.count("- ") + text.count(",")
    if entries > MAX_NODES:
        raise ConfigLimitError(f"too large for packlint to read (about {entries:,} values, more than {MAX_NODES:,})")
    root = _compose_libyaml(text)
    if root is _NOT_COMPOSED:
        from ruamel.yaml.error import YAMLError

        tokens = text.count("\n") + text.count(",") + text.count("[") + text.count("{")
        if tokens > MAX_PURE_YAML_TOKENS:  # counted before composing (R10: a 400 KB flow list took 8-26 s)
            raise ConfigLimitError(
                f"too large for packlint to read ({tokens:,} lines and flow items, more than "
                f"{MAX_PURE_YAML_TOKENS:,} in a YAML file its C reader cannot take)"
            )

        y = _yaml()
        try:
            root = y.compose(text)
        except YAMLError as exc:
            raise _yaml_error(exc) from None
        except RecursionError:
            raise ConfigFileError("the YAML is nested too deeply") from None
    if root is None:
        return CNode(None, 1, 1, 1, 1)
    count = [0]
    return _convert(root, dialect, 0, count)


_NOT_COMPOSED = object()
# what libyaml (YAML 1.1) may read otherwise than ruamel's composer (YAML 1.2): NEL / LS / PS line
# breaks, a BOM, directives (`%YAML 1.2`), and characters YAML 1.2 no longer allows unescaped
_LIBYAML_UNSURE = LazyRegex(
    "[\x85\u2028\u2029\ufeff]|^%|[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", re.M
)
_LIBYAML_MAX_BRACKETS = 256  # flow collections: each may nest one level (libyaml composes recursively in C)
_LIBYAML_MAX_INDENT = 256  # block collections: each level indents by at least one more column


def _compose_libyaml(text: str) -> Any:
    """The node tree of PyYAML's libyaml composer (C: ~0.2 ms where ruamel's pure-Python composer takes
    ~5-15 ms for a 50-line LLaMA-Factory config), or _NOT_COMPOSED: PyYAML or libyaml missing, a text
    where YAML 1.1 and 1.2 may read differently, nesting deep enough to matter, or any error (ruamel
    then reads it and reports the error in its own words). Both composers type nothing: packlint
    types plain scalars itself (`resolve_plain`), so the trees carry the same values and marks
    (checked on every YAML file of the test fixtures and the mirrored stacks: tests/test_config_oracles.py)."""
    if (
        not text.endswith("\n")  # (libyaml ends the last line there, ruamel at the end of the text)
        or text.count("[") + text.count("{") > _LIBYAML_MAX_BRACKETS
        or _LIBYAML_UNSURE.search(text) is not None
        or _max_indent(text) > _LIBYAML_MAX_INDENT
    ):
        return _NOT_COMPOSED
    try:
        from yaml import CSafeLoader, YAMLError
    except ImportError:  # no PyYAML, or PyYAML built without libyaml
        return _NOT_COMPOSED
    loader = CSafeLoader(text)
    try:
        root = loader.get_single_node()
    except (YAMLError, ValueError, TypeError, RecursionError, MemoryError):
        return _NOT_COMPOSED
    finally:
        loader.dispose()
    # an empty value (`key:`) ends where it starts in libyaml, at the next token in ruamel. A node met
    # twice is an alias: ruamel's path reads those (its walk is bounded by MAX_NODES; this one would
    # visit a "billion laughs" document's shared nodes exponentially often)
    stack = [root] if root is not None else []
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if len(seen) > MAX_NODES:  # (libyaml's tree is enough to refuse: R10)
            raise ConfigLimitError(f"too large for packlint to read (more than {MAX_NODES:,} values)")
        if id(node) in seen:
            return _NOT_COMPOSED
        seen.add(id(node))
        if node.id == "scalar":
            # (and ruamel keeps a folded block's fold points in its value as \a, for its round trip)
            if (node.value == "" and not node.style) or node.style == ">":
                return _NOT_COMPOSED
        elif node.id == "mapping":
            for k, v in node.value:
                stack += (k, v)
        else:
            stack += node.value
    return root


def _max_indent(text: str) -> int:
    most = 0
    for line in text.split("\n"):
        n = len(line) - len(line.lstrip(" \t-?:"))
        if n > most:
            most = n
    return most


_YAML: Any = None


def _yaml():
    global _YAML
    if _YAML is None:
        from ruamel.yaml import YAML

        _YAML = YAML(typ="rt", pure=True)
    return _YAML


def _span(node) -> tuple[int, int, int, int]:
    s, e = node.start_mark, node.end_mark
    return s.line + 1, s.column + 1, e.line + 1, e.column + 1


def _convert(node, dialect: str, depth: int, count: list[int]) -> CNode:
    """A composed node (ruamel's or PyYAML's: the same shape; a plain scalar's style is None in one,
    '' in the other) as a CNode."""
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_NODES:
        line, col, _, _ = _span(node)
        raise ConfigLimitError(f"the file is nested deeper than {MAX_DEPTH} levels or too large", line, col)
    line, col, eline, ecol = _span(node)
    kind = node.id  # "mapping" | "sequence" | "scalar" (both libraries' node classes)
    if kind == "mapping":
        out: dict[str, CNode] = {}
        merges: list[CNode] = []
        for k, v in node.value:
            key_value = _convert(k, dialect, depth + 1, count)
            tag = str(getattr(k, "tag", "") or "")
            if tag.endswith(":merge") or (k.value == "<<" and not getattr(k, "style", None)):
                merged = _convert(v, dialect, depth + 1, count)
                merges.extend(merged.value if isinstance(merged.value, list) else [merged])
                continue
            key = key_value.value
            key = "null" if key is None else (str(key).lower() if isinstance(key, bool) else str(key))
            out.pop(key, None)  # a repeated key: the last one wins (PyYAML); keep its position
            out[key] = _convert(v, dialect, depth + 1, count)
            # the key's position, for reporting "set here": the key through the value's end
            out[key] = CNode(out[key].value, key_value.line, key_value.column, out[key].end_line, out[key].end_column)
        if merges:
            base: dict[str, CNode] = {}
            for m in merges:  # `<<: [*A, *B]`: earlier ones win (PyYAML flatten_mapping)
                if isinstance(m.value, dict):
                    for k2, v2 in m.value.items():
                        base.setdefault(k2, v2)
            base.update(out)
            out = base
        return CNode(out, line, col, eline, ecol)
    if kind == "sequence":
        return CNode([_convert(x, dialect, depth + 1, count) for x in node.value], line, col, eline, ecol)
    text = node.value
    style = getattr(node, "style", None)
    try:
        value = resolve_plain(text, dialect) if not style else text
    except ValueError:  # int() of more than 4,300 digits: PyYAML's loader raises the same (R21)
        raise ConfigFileError(f"a number too long to read ({len(text):,} characters)", line, col) from None
    return CNode(value, line, col, eline, ecol)


# ---------------------------------------------------------------------------------------------- JSON


def load_json(text: str) -> CNode:
    """JSON with positions: values exactly as json.loads gives them, positions from a small scanner
    of the same text (no YAML parser involved)."""
    import json

    try:
        plain = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) for integer string conversion" (R21)
        raise ConfigFileError(f"a number too long to read ({str(exc).split(':')[0]})") from None
    except RecursionError:
        raise ConfigFileError("the JSON is nested too deeply") from None
    try:
        node = _JsonScanner(text).document()
    except (IndexError, ValueError, RecursionError):
        node = None
    if node is None:
        return _from_plain(plain, 1, 1, 0)
    return _retype(node, plain)


_JSON_TOKEN = LazyRegex(r"""[ \t\r\n]*(?:("(?:[^"\\]|\\.)*")|([{}\[\],:])|(-?[0-9][0-9.eE+\-]*|true|false|null))""")


class _JsonScanner:
    """Positions of a JSON text's values (the text is valid: json.loads accepted it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        self.depth = 0

    def _lc(self, offset: int) -> tuple[int, int]:
        import bisect

        i = bisect.bisect_right(self.line_starts, offset) - 1
        return i + 1, offset - self.line_starts[i] + 1

    def _next(self):
        m = _JSON_TOKEN.match(self.text, self.pos)
        if m is None:
            raise ValueError("token")
        self.pos = m.end()
        start = m.start(1) if m.group(1) else m.start(2) if m.group(2) else m.start(3)
        return m, start

    def document(self) -> CNode:
        m, start = self._next()
        return self._value(m, start)

    def _value(self, m, start: int) -> CNode:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConfigFileError(f"the file is nested deeper than {MAX_DEPTH} levels", *self._lc(start))
        line, col = self._lc(start)
        tok = m.group(2)
        if tok == "{":
            out: dict[str, CNode] = {}
            m, s2 = self._next()
            while m.group(2) != "}":
                key_line, key_col = self._lc(s2)
                key = m.group(1)[1:-1]
                self._next()  # ':'
                vm, vs = self._next()
                child = self._value(vm, vs)
                out.pop(key, None)
                out[key] = CNode(child.value, key_line, key_col, child.end_line, child.end_column)
                m, s2 = self._next()
                if m.group(2) == ",":
                    m, s2 = self._next()
            value: Any = out
        elif tok == "[":
            items = []
            m, s2 = self._next()
            while m.group(2) != "]":
                items.append(self._value(m, s2))
                m, s2 = self._next()
                if m.group(2) == ",":
                    m, s2 = self._next()
            value = items
        else:
            value = m.group(1) or m.group(3)
        self.depth -= 1
        end_line, end_col = self._lc(self.pos)
        return CNode(value, line, col, end_line, end_col)


def _retype(node: CNode, plain: Any) -> CNode:
    if isinstance(plain, dict) and isinstance(node.value, dict):
        return CNode(
            {
                k: _retype(node.value[k], v) if k in node.value else _from_plain(v, *_pos(node)[:2], 0)
                for k, v in plain.items()
            },
            *_pos(node),
        )
    if isinstance(plain, list) and isinstance(node.value, list):
        return CNode([_retype(n, v) for n, v in zip(node.value, plain, strict=False)], *_pos(node))
    return CNode(plain, *_pos(node))


def _pos(n: CNode) -> tuple[int, int, int, int]:
    return n.line, n.column, n.end_line, n.end_column


def _from_plain(value: Any, line: int, column: int, depth: int) -> CNode:
    if depth > MAX_DEPTH:
        raise ConfigFileError(f"the file is nested deeper than {MAX_DEPTH} levels", line, column)
    if isinstance(value, dict):
        return CNode(
            {str(k): _from_plain(v, line, column, depth + 1) for k, v in value.items()}, line, column, line, column
        )
    if isinstance(value, list):
        return CNode([_from_plain(v, line, column, depth + 1) for v in value], line, column, line, column)
    return CNode(value, line, column, line, column)


# ---------------------------------------------------------------------------------------------- TOML

_TOML_TABLE = LazyRegex(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_TOML_KEY = LazyRegex(r"^\s*([A-Za-z0-9_\-\.\"' ]+?)\s*=")


def load_toml(text: str) -> CNode:
    """TOML via tomllib; each key's line found by scanning table headers and `key =` lines."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    from packlint import toml_bounds

    try:  # (bounded before parsing: a 40 KB dotted key took 1.6 GB, audit R07)
        plain = toml_bounds.loads(text)
    except toml_bounds.TomlLimitError as exc:
        if "number" in str(exc):  # (tomllib itself refuses it: the stack's loader stops there too)
            raise ConfigFileError(f"invalid TOML: {exc}", exc.line or 1, 1) from None
        raise ConfigLimitError(f"over packlint's limits: {exc}", exc.line or 1, 1) from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"line (\d+), column (\d+)", msg)
        raise ConfigFileError(
            f"invalid TOML: {msg.split(' (at')[0]}", *(int(x) for x in m.groups()) if m else (1, 1)
        ) from None
    positions: dict[tuple[str, ...], tuple[int, int, int]] = {}
    table: tuple[str, ...] = ()
    for i, raw in enumerate(text.splitlines(), 1):
        m = _TOML_TABLE.match(raw)
        if m:
            table = tuple(p.strip().strip("\"'") for p in m.group(1).split("."))
            positions.setdefault(table, (i, raw.index("[") + 1, len(raw) + 1))
            continue
        m = _TOML_KEY.match(raw)
        if m:
            key = tuple(p.strip().strip("\"'") for p in m.group(1).split("."))
            positions.setdefault(table + key, (i, m.start(1) + 1, len(raw.rstrip()) + 1))
    return _toml_node(plain, (), positions, 0)


def _toml_node(value: Any, path: tuple[str, ...], positions: dict, depth: int) -> CNode:
    line, col, end = positions.get(path, (1, 1, 1))
    if depth > MAX_DEPTH:
        raise ConfigFileError(f"the file is nested deeper than {MAX_DEPTH} levels", line, col)
    if isinstance(value, dict):
        inner = {str(k): _toml_node(v, (*path, str(k)), positions, depth + 1) for k, v in value.items()}
        return CNode(inner, line, col, line, end)
    if isinstance(value, list):
        return CNode([_toml_node(v, path, positions, depth + 1) for v in value], line, col, line, end)
    if not isinstance(value, (bool, int, float, str)):
        value = str(value)  # dates and times: their text
    return CNode(value, line, col, line, end)


def load_text(text: str, fmt: str, dialect: str = "pyyaml") -> CNode:
    if fmt == "json":
        return load_json(text)
    if fmt == "toml":
        return load_toml(text)
    return load_yaml(text, dialect)


def format_of(path: str, default: str = "yaml") -> str:
    low = path.lower()
    if low.endswith(".json"):
        return "json"
    if low.endswith(".toml"):
        return "toml"
    if low.endswith((".yaml", ".yml")):
        return "yaml"
    return default
