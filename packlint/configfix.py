"""Fixes in config files (YAML / JSON): a finding's config-file FixPlan (`set_key`, `replace_value`,
`delete_key`) turned into text edits at the positions the file's own parse gives, and the loop that
applies them (docs/fixes.md "Fixes in config files").

The edits are text edits, never a re-dump: comments, key order, blank lines and the other values'
spelling stay as they are. A replaced scalar keeps its quoting style; a new key goes after the reported
setting (or after the last key of its mapping) at its siblings' indentation. Every edit is verified
the way a script fix is verified with `bash -n`: the edited text is parsed again with packlint's loader
for the stack (packlint.configs.files: the stack's YAML typing, or `json`), and the file's settings must
differ from the old ones in exactly the intended key, now holding exactly the intended typed value
(type included: `true` is not `"true"`, `1` is not `1.0`). Anything else drops the fix.

Refused (no fix, and the reason is said): a value set by the command line, a Hydra-composed file, a
file pulled in by another (`defaults:`), a TOML file (the engine decides those: FixPlan.refused); a
YAML file with anchors, aliases or merge keys (`&x`, `*x`, `<<:`), several documents, or a key in a
flow mapping (`{a: 1}`); a value that is not a one-line scalar; a file with CR line ends or a
byte-order mark (packlint.fixes.read_fixable).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from packlint.findings import Finding
from packlint.fixes import MAX_ROUNDS, Fix, FixOutcome, Script, TextEdit, apply_edits, choose

CONFIG_KINDS = frozenset({"set_key", "replace_value", "delete_key"})
_PLAIN_STR = re.compile(r"[A-Za-z_/][A-Za-z0-9_./\-]*")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


class Refused(Exception):
    """No fix: `why` says what stopped it (shown by `--diff` / `--fix` on stderr)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def is_config_fix(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.kind in CONFIG_KINDS


# ---------------------------------------------------------------------------------------------- values


def _typed(value_text: str, dialect: str) -> Any:
    """The rule's `value` (YAML flow syntax) as the file's loader types it."""
    from packlint.configs.files import ConfigFileError, load_yaml

    try:
        node = load_yaml("v: " + value_text, "yaml12" if dialect == "json" else dialect)
    except ConfigFileError:
        raise Refused(f"the fix's value {value_text!r} is not a YAML scalar") from None
    value = node.plain()["v"] if isinstance(node.value, dict) else None
    if isinstance(value, (dict, list)):
        raise Refused("a fix sets scalar values only")
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (`True` is not `1`, `1` is not `1.0`)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _plain_text(value: Any, value_text: str, dialect: str) -> str | None:
    """A plain YAML scalar that the dialect types as `value`, or None (then quote it)."""
    from packlint.configs.files import resolve_plain

    candidates = [value_text.strip()]
    if isinstance(value, bool):
        candidates.append("true" if value else "false")
    elif value is None:
        candidates.append("null")
    elif isinstance(value, (int, float)):
        candidates.append(repr(value))
    elif isinstance(value, str):
        candidates.append(value)
    for c in candidates:
        plain = c and (_PLAIN_STR.fullmatch(c) or not isinstance(value, str)) and "#" not in c and ": " not in c
        if plain and _same(resolve_plain(c, dialect), value):
            return c
    return None


def _yaml_scalar(value: Any, value_text: str, dialect: str, style: str | None) -> str:
    """The text of `value` in a YAML file, keeping the replaced scalar's quoting style for a string."""
    if isinstance(value, str):
        if style == "'":
            return "'" + value.replace("'", "''") + "'"
        if style == '"':
            return json.dumps(value, ensure_ascii=False)
    plain = _plain_text(value, value_text, dialect)
    if plain is not None:
        return plain
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise Refused(f"no YAML spelling of {value!r} for this loader")


def _flat(value: Any, prefix: str = "", out: dict | None = None) -> dict:
    """Leaf settings under dotted keys (non-empty mappings recurse; lists and {} are leaves), as
    packlint.configs.flatten makes them."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif prefix:
        out[prefix] = value
    return out


def verify(old_text: str, new_text: str, fmt: str, dialect: str, key: str, value: Any, delete: bool) -> bool:
    """Whether the edited text loads (with packlint's loader for the stack) to the old settings with
    exactly `key` changed: set to `value` (type included), or gone when `delete`."""
    from packlint.configs.files import ConfigFileError, load_text

    try:
        old = _flat(load_text(old_text, fmt, dialect).plain())
        new = _flat(load_text(new_text, fmt, dialect).plain())
    except (ConfigFileError, RecursionError, ValueError):
        return False
    expected = {k: v for k, v in old.items() if k != key and not k.startswith(key + ".")}
    if not delete:
        expected[key] = value
    return new.keys() == expected.keys() and all(_same(new[k], expected[k]) for k in new)


# ---------------------------------------------------------------------------------------------- the file


_SHARED = "the file uses anchors, aliases or merge keys (`&x`, `*x`, `<<:`): an edit could change other keys"


class _Doc:
    """A config file's text and its node tree (ruamel.yaml's composer, for JSON too: JSON is YAML's
    flow syntax), with the checks that make text edits safe."""

    def __init__(self, path: str, text: str, fmt: str) -> None:
        from ruamel.yaml.error import YAMLError

        from packlint.configs.files import _yaml

        self.path, self.text, self.fmt = path, text, fmt
        self.script = Script(path, text)
        try:
            docs = list(_yaml().compose_all(text))
        except (YAMLError, RecursionError):
            raise Refused("the file could not be read with its positions") from None
        if len(docs) > 1:
            raise Refused("the file holds several YAML documents (`---`)")
        self.root = docs[0] if docs else None
        if fmt == "yaml":
            self._refuse_shared_nodes()

    def _refuse_shared_nodes(self) -> None:
        from ruamel.yaml.nodes import MappingNode, SequenceNode

        seen: set[int] = set()
        stack = [self.root] if self.root is not None else []
        while stack:
            n = stack.pop()
            if id(n) in seen or getattr(n, "anchor", None):
                raise Refused(_SHARED)
            seen.add(id(n))
            if isinstance(n, MappingNode):
                for k, v in n.value:
                    if str(getattr(k, "tag", "") or "").endswith(":merge") or k.value == "<<":
                        raise Refused(_SHARED)
                    stack.extend((k, v))
            elif isinstance(n, SequenceNode):
                stack.extend(n.value)

    def entry_at(self, line: int, column: int) -> tuple[list[str], Any, Any, Any]:
        """(key path, parent mapping, key node, value node) of the mapping entry whose key starts at
        line:column (1-based)."""
        from ruamel.yaml.nodes import MappingNode

        stack: list[tuple[Any, list[str]]] = [(self.root, [])]
        while stack:
            n, path = stack.pop()
            if isinstance(n, MappingNode):
                for k, v in n.value:
                    if k.start_mark.line + 1 == line and k.start_mark.column + 1 == column:
                        return [*path, str(k.value)], n, k, v
                    stack.append((v, [*path, str(k.value)]))
        raise Refused("the reported setting is not a key of this file (it may come from a nested file)")

    def mapping_at(self, path: list[str]) -> Any:
        from ruamel.yaml.nodes import MappingNode

        node = self.root
        for part in path:
            if not isinstance(node, MappingNode):
                break
            node = next((v for k, v in node.value if str(k.value) == part), None)
        if not isinstance(node, MappingNode):
            where = ".".join(path) or "the document's top level"
            raise Refused(f"{where} is not a mapping in this file")
        return node

    def refuse_flow(self, mapping: Any) -> None:
        if self.fmt == "yaml" and mapping.flow_style:
            raise Refused("the key is in a flow mapping (`{a: 1, b: 2}`): not edited")

    def edit(self, start: int, end: int, content: str) -> TextEdit:
        return self.script.edit(start, end, content)

    def line_start(self, off: int) -> int:
        return self.text.rfind("\n", 0, off) + 1

    def line_end(self, off: int) -> int:
        """The offset after the newline ending the line that holds `off` (the text's end without one)."""
        e = self.text.find("\n", off)
        return len(self.text) if e < 0 else e + 1

    def alone(self, key) -> bool:
        """Whether the key is the first thing on its line."""
        s = key.start_mark.index
        return not self.text[self.line_start(s) : s].strip()


def _last_end(node) -> int:
    """The offset just after the last scalar of a value (a nested mapping's end_mark may reach past the
    comments and blank lines that follow it)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    while isinstance(node, (MappingNode, SequenceNode)) and node.value and not node.flow_style:
        node = node.value[-1][1] if isinstance(node, MappingNode) else node.value[-1]
    return int(node.end_mark.index)


# ---------------------------------------------------------------------------------------------- edits


def _replace(doc: _Doc, key_path: list[str], value_node, value: Any, value_text: str, dialect: str) -> list[TextEdit]:
    from ruamel.yaml.nodes import ScalarNode

    if not isinstance(value_node, ScalarNode):
        raise Refused(f"{'.'.join(key_path)} holds a mapping or a list, not one value")
    style = getattr(value_node, "style", None)
    if doc.fmt == "yaml" and style not in (None, "'", '"'):
        raise Refused(f"{'.'.join(key_path)} is a block scalar (`|` / `>`)")
    s, e = int(value_node.start_mark.index), int(value_node.end_mark.index)
    if "\n" in doc.text[s:e]:
        raise Refused(f"{'.'.join(key_path)} spans several lines")
    if doc.fmt == "json":
        content = json.dumps(value, ensure_ascii=False)
    else:
        content = _yaml_scalar(value, value_text, dialect, style)
    if doc.fmt == "json":
        current = json.loads(doc.text[s:e])
    else:
        from packlint.configs.files import resolve_plain

        current = resolve_plain(value_node.value, dialect) if style is None else value_node.value
    if doc.text[s:e] == content or _same(current, value):
        raise Refused(f"{'.'.join(key_path)} already holds {doc.text[s:e]}")
    return [doc.edit(s, e, content)]


def _delete(doc: _Doc, key_path: list[str], parent, key, value_node) -> list[TextEdit]:
    ks = int(key.start_mark.index)
    if doc.fmt == "json":
        if not doc.alone(key):
            raise Refused("the key shares its line with others: not deleted")
        start = doc.line_start(ks)
        e = _last_end(value_node)
        m = re.compile(r"[ \t]*,[ \t]*\n?").match(doc.text, e)
        if m:  # `"k": v,` on its own line: the line goes
            return [doc.edit(start, m.end(), "")]
        before = re.search(r",[ \t]*\n?[ \t]*$", doc.text[:ks])
        if before is None:
            raise Refused("the key is the only one of its object: not deleted")
        return [doc.edit(before.start(), e, "")]
    if not doc.alone(key):
        raise Refused("the key is not the first thing on its line (a list item `- key:`): not deleted")
    start = doc.line_start(ks)
    end = doc.line_end(max(_last_end(value_node) - 1, ks))
    return [doc.edit(start, end, "")]


def _insert(doc: _Doc, parent, anchor, name: str, value: Any, value_text: str, dialect: str) -> list[TextEdit]:
    """`name: value` after the anchor entry (the reported setting when it is a sibling, else the
    mapping's last key), at the anchor key's indentation."""
    k, v = anchor
    e = _last_end(v)
    if doc.fmt == "json":
        content = f"{json.dumps(name)}: {json.dumps(value, ensure_ascii=False)}"
        if doc.alone(k):
            indent = doc.text[doc.line_start(int(k.start_mark.index)) : int(k.start_mark.index)]
            return [doc.edit(e, e, f",\n{indent}{content}")]
        return [doc.edit(e, e, f", {content}")]
    if not _PLAIN_KEY.fullmatch(name):
        raise Refused(f"the key {name!r} needs quoting")
    if not doc.alone(k):
        raise Refused("the keys of this mapping do not start their lines: no place for a new one")
    ks = int(k.start_mark.index)
    indent = doc.text[doc.line_start(ks) : ks]
    at = doc.line_end(max(e - 1, ks))
    prefix = "" if doc.text[at - 1 : at] == "\n" else "\n"
    line = f"{prefix}{indent}{name}: {_yaml_scalar(value, value_text, dialect, None)}\n"
    return [doc.edit(at, at, line)]


def plan_config_edits(finding: Finding, path: str, text: str) -> tuple[list[TextEdit], str, Any, bool]:
    """(edits, the dotted key they change, its intended value, whether it is deleted); Refused when the
    fix cannot be made safely."""
    plan = finding.fix
    assert plan is not None
    if plan.refused:
        raise Refused(plan.refused)
    if plan.start.path != path:
        raise Refused(f"the fix edits {plan.start.path}")
    fmt = plan.format or "yaml"
    dialect = plan.dialect or ("json" if fmt == "json" else "pyyaml")
    if "\r" in text or text.startswith("\ufeff"):
        raise Refused("the file has CR line ends or a byte-order mark")
    doc = _Doc(path, text, fmt)
    if plan.kind == "set_key":
        parts = (plan.key or "").split(".")
        parent = doc.mapping_at(parts[:-1])
        doc.refuse_flow(parent)
        value = _typed(plan.value or "", dialect)
        existing = next(((k, v) for k, v in parent.value if str(k.value) == parts[-1]), None)
        if existing is not None:
            edits = _replace(doc, parts, existing[1], value, plan.value or "", dialect)
            return edits, ".".join(parts), value, False
        if not parent.value:
            raise Refused(f"{'.'.join(parts[:-1]) or 'the document'} has no key to put {parts[-1]} beside")
        at = (plan.start.line, plan.start.column)
        anchor = next(
            ((k, v) for k, v in parent.value if (k.start_mark.line + 1, k.start_mark.column + 1) == at),
            parent.value[-1],
        )
        return _insert(doc, parent, anchor, parts[-1], value, plan.value or "", dialect), ".".join(parts), value, False
    key_path, parent, key, value_node = doc.entry_at(plan.start.line, plan.start.column)
    doc.refuse_flow(parent)
    if plan.kind == "delete_key":
        return _delete(doc, key_path, parent, key, value_node), ".".join(key_path), None, True
    value = _typed(plan.value or "", dialect)
    return _replace(doc, key_path, value_node, value, plan.value or "", dialect), ".".join(key_path), value, False


def _config_fix(finding: Finding, path: str, text: str) -> tuple[Fix | None, str | None, tuple]:
    """(fix, None, (key, value, deleted)) or (None, why not, ())."""
    plan = finding.fix
    if plan is None:
        return None, None, ()
    try:
        edits, key, value, delete = plan_config_edits(finding, path, text)
    except Refused as r:
        return None, r.why, ()
    except (ValueError, AttributeError, IndexError, TypeError, UnicodeError) as exc:
        return None, f"the file could not be edited safely ({type(exc).__name__})", ()
    fmt = plan.format or "yaml"
    dialect = plan.dialect or ("json" if fmt == "json" else "pyyaml")
    if not verify(text, apply_edits(text, edits), fmt, dialect, key, value, delete):
        return None, "the edited file would not load to exactly the intended value: not offered", ()
    return Fix(plan.applicability, plan.title, tuple(edits)), None, (key, value, delete)


def config_fix(finding: Finding, path: str, text: str) -> tuple[Fix | None, str | None]:
    """The finding's config-file fix as verified edits on `text` (the file `path`), or (None, why not)."""
    fix, why, _intent = _config_fix(finding, path, text)
    return fix, why


# ---------------------------------------------------------------------------------------------- merged


_SECTIONS = ("deepspeed", "accelerate")


def merged_settings(models: list[dict], path: str) -> dict[tuple, Any]:
    """The merged settings of every launch variant that reads the config file `path`, keyed by (script,
    launch, variant, section, key); an unknown value as ("unknown", reason)."""
    out: dict[tuple, Any] = {}
    for model in models:
        script = model.get("script")
        for li, launch in enumerate(model.get("launches") or []):
            variants = launch.get("variants") or [launch]
            for vi, variant in enumerate(variants):
                cfg = variant.get("config") or {}
                roles = {f.get("role") for f in cfg.get("files") or [] if f.get("file") == path}
                for role in roles:
                    section = role if role in _SECTIONS else "main"
                    settings = cfg.get("settings") if section == "main" else (cfg.get("sections") or {}).get(section)
                    for key, entry in (settings or {}).items():
                        value = ("unknown", entry["unknown"]) if "unknown" in entry else entry.get("value")
                        out[(script, li, vi, section, key)] = value
                    out[(script, li, vi, section, None)] = True  # (this variant reads the file)
    return out


def merged_ok(before: dict[tuple, Any], after: dict[tuple, Any], intents: list[tuple]) -> bool:
    """Whether the merged settings changed exactly as intended: in every variant that reads the file,
    each intended key (key, value, deleted) now holds its value (or is gone: no parent file, default or
    override brings it back), and no other setting changed."""
    readers = {k[:4] for k in before if k[4] is None}
    if readers != {k[:4] for k in after if k[4] is None}:
        return False

    def under(key: str, ikey: str) -> bool:
        return key == ikey or key.startswith(ikey + ".")

    for reader in readers:
        for ikey, value, delete in intents:
            for k in after:
                if k[:4] == reader and k[4] is not None and under(k[4], ikey) and (delete or k[4] != ikey):
                    return False
            if not delete and (reader + (ikey,) not in after or not _same(after[reader + (ikey,)], value)):
                return False
    for k in before.keys() | after.keys():
        if k[4] is None or any(under(k[4], i[0]) for i in intents):
            continue
        if k not in before or k not in after or not _same(before[k], after[k]):
            return False
    return True


# ---------------------------------------------------------------------------------------------- loop


def _merged(check, path: str) -> dict[tuple, Any] | None:
    """The merged settings of the launches `check` last analysed (None when it keeps no models)."""
    models = getattr(check, "models", None)
    return merged_settings(models, path) if models is not None else None


def _loads(text: str, fmt: str, dialect: str) -> bool:
    from packlint.configs.files import ConfigFileError, load_text

    try:
        load_text(text, fmt, dialect)
    except (ConfigFileError, RecursionError, ValueError):
        return False
    return True


def fix_config_text(
    path: str, text: str, check: Callable[[str], list[Finding]], *, unsafe: bool, apply: bool = True
) -> FixOutcome:
    """Apply the config-file fixes whose edits land in `path` to a fixed point (as packlint.fixes.fix_text
    does for scripts: safe ones together, unsafe ones one per round, a re-check after each round).
    `check(text)` gives the findings with the file holding `text`. The outcome's `refusals` lists
    `PKxxx at line:col: why` for the findings left with a fix that could not be made."""
    original = text
    applied = rounds = 0
    refusals: list[str] = []
    note = None
    fmt, dialect = "yaml", "pyyaml"
    found = check(text)
    merged = _merged(check, path)
    for _ in range(MAX_ROUNDS):
        findings = [f for f in found if is_config_fix(f) and f.fix is not None and f.fix.start.path == path]
        refusals = []
        fixes: list[tuple[Fix, tuple]] = []
        for f in findings:
            assert f.fix is not None
            fmt, dialect = f.fix.format or fmt, f.fix.dialect or dialect
            fix, why, intent = _config_fix(f, path, text)
            if fix is None:
                if why:
                    refusals.append(f"{f.code} at {f.location.line}:{f.location.column}: no fix: {why}")
                continue
            if fix.applicability == "safe" or unsafe:
                fixes.append((fix, intent))
        if not apply:
            break
        intents = {id(fx): intent for fx, intent in fixes}
        chosen = choose([fx for fx, _ in fixes if fx.applicability == "safe"])
        if not chosen:
            chosen = choose([fx for fx, _ in fixes if fx.applicability == "unsafe"])[:1]
        if not chosen:
            break
        new = apply_edits(text, [e for f in chosen for e in f.edits])
        if new == text or not _loads(new, fmt, dialect):
            break
        new_found = check(new)
        new_merged = _merged(check, path)
        wanted = [intents[id(fx)] for fx in chosen]
        if merged is not None and new_merged is not None and not merged_ok(merged, new_merged, wanted):
            note = "not fixed: the edit would not change the run's merged settings exactly as intended"
            break
        text, found, merged = new, new_found, new_merged
        applied += len(chosen)
        rounds += 1
    outcome = FixOutcome(path, original, text, applied, rounds, note)
    outcome.refusals = refusals
    return outcome
