"""Settings of a launch's configuration: a file's leaves under dotted keys, command-line overrides merged
as the stack merges them (Hydra/OmegaConf dotlists, `--key value` flags), OmegaConf interpolations, and a
value rendered as text for conditions and messages."""

from __future__ import annotations

from typing import Any

from packlint import evidence
from packlint.regex import LazyRegex
from packlint.values import Unknown


def _loc(file: str, node) -> dict:
    return {
        "file": file,
        "line": node.line,
        "column": node.column,
        "end_line": node.end_line,
        "end_column": node.end_column,
    }


def _span_loc(span) -> dict:
    if span is None:
        return {}
    return {
        "file": span.file,
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
    }


def flatten(node, file: str, prefix: str, out: dict, source: str = "file") -> None:
    """Leaf settings of a file under dotted keys (lists and empty mappings are leaves)."""
    value = node.value
    if isinstance(value, dict) and value:
        for k, child in value.items():
            flatten(child, file, f"{prefix}.{k}" if prefix else k, out, source)
        return
    if not prefix:
        return
    out[prefix] = {"value": node.plain(), **_loc(file, node), "source": source}


def _remove_prefix(settings: dict, key: str) -> None:
    for k in [k for k in settings if k == key or k.startswith(key + ".")]:
        del settings[k]


def _set_value(settings: dict, key: str, value: Any, loc: dict, source: str) -> None:
    _remove_prefix(settings, key)
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _set_value(settings, f"{key}.{k}", v, loc, source)
        return
    settings[key] = {"value": value, **loc, "source": source}


_BOOL_WORDS = {"true": True, "false": False}


def _flag_value(occ) -> tuple[Any, str | None]:
    """A `--key value` flag's value as text (HfArgumentParser types it by the field, which packlint does
    not know: bool words become booleans, other text stays text); (None, reason) when unknown."""
    if not occ.args:
        return True, None
    unknown = next((a for a in occ.args if isinstance(a, Unknown)), None)
    if unknown is not None:
        return None, unknown.reason
    unset = next((a.origin for a in occ.args if not a.text and (a.origin or "").startswith("unset:")), None)
    if unset is not None:
        # `--torch_dtype "$TORCH_DTYPE"`, the variable never set in the script (a worker whose launcher exports
        # it: namhkoh/gelab-env): its value is the environment's, unknown here, not the empty string
        return None, f"${unset.split(':', 1)[1]}, which the script never sets (the environment's)"
    texts = [a.text for a in occ.args]
    if len(texts) > 1:
        return texts, None
    t = texts[0]
    return _BOOL_WORDS.get(t.lower(), t), None


_PLAIN_SCALAR = LazyRegex(r"[A-Za-z0-9_][A-Za-z0-9_.+\-/~@]*|[-+.][A-Za-z0-9_.+\-/~@]+")


def _hydra_value(text: str) -> Any:
    """A Hydra/OmegaConf override's value (`1e-5`, `true`, `null`, `[a,b]`, `'quoted'`), read with
    OmegaConf's YAML typing (OmegaConf.from_dotlist loads the value as YAML)."""
    from packlint.configs.files import ConfigFileError, resolve_plain

    if not text.strip():
        return None
    if _PLAIN_SCALAR.fullmatch(text):
        try:
            return resolve_plain(text, "omegaconf")  # a plain scalar: no YAML parser needed
        except ValueError:  # an integer of more than 4,300 digits (R21): kept as written
            return text
    from packlint.configs.files import load_yaml

    try:
        return load_yaml(text, "omegaconf").plain()
    except ConfigFileError:
        return text


def _apply_overrides(
    entry: dict, cfg: dict, flags: dict, config_flags: set[str], settings: dict, file_read: bool = False
) -> None:
    styles = entry.get("overrides", ["none"])
    if file_read and "file_overrides" in entry:
        # the program merges other overrides once it has read its file (LLaMA-Factory: key=value only)
        styles = entry["file_overrides"]
    occurrences = sorted(
        ((name, occ) for name, occs in flags.items() for occ in occs if name not in config_flags),
        key=lambda p: (p[1].span.line, p[1].span.column) if p[1].span else (0, 0),
    )
    for name, occ in occurrences:
        loc = _span_loc(occ.span)
        if occ.style == "hydra" and ("dotlist" in styles or "hydra" in styles):
            key = name
            if key.startswith("~"):
                _remove_prefix(settings, key[1:])
                continue
            key = key.lstrip("+")
            if not occ.args:
                continue
            arg = occ.args[0]
            if isinstance(arg, Unknown):
                _remove_prefix(settings, key)
                settings[key] = {"unknown": f"{name} is {arg.reason}", **loc, "source": "override"}
                continue
            vloc = _span_loc(arg.span) if arg.span is not None else loc
            # Hydra reads `key=` as the empty string; OmegaConf's dotlist as null (an empty YAML document)
            value = "" if "hydra" in styles and not arg.text.strip() else _hydra_value(arg.text)
            _set_value(settings, key, value, vloc or loc, "override")
        elif name.startswith("--") and ("hf" in styles or "dotted-flags" in styles):
            key = name[2:]
            if "hf" in styles:
                key = key.replace("-", "_")
            value, unknown = _flag_value(occ)
            _remove_prefix(settings, key)
            if unknown is not None:
                settings[key] = {"unknown": f"{name} is {unknown}", **loc, "source": "flag"}
            else:
                vspan = occ.args[0].span if len(occ.args) == 1 and occ.args[0].span is not None else occ.span
                settings[key] = {"value": value, **_span_loc(vspan), "source": "flag"}
                if occ.span is not None and occ.span != vspan:
                    settings[key]["key_at"] = _span_loc(occ.span)
                premise = evidence.of_values(occ.args)
                if premise is not None:  # (what the value rests on: a rule judging it records it)
                    settings[key]["evidence"] = evidence.to_json(premise)
        elif name.startswith("--") and file_read and "file_overrides" in entry:
            # not an override once the file is read: the stack's loader takes `--name` for a key of its
            # own (OmegaConf.from_cli: {'--name': None}); the YAML's value stays (rules/stack_*.toml)
            cfg.setdefault("ignored_flags", []).append({"name": name.split("=", 1)[0], **loc})
        elif "none" not in styles and not name.startswith("-"):
            # a bare `key=value` where the stack takes none: the program decides what it means
            cfg.setdefault("notes", []).append(f"{name}=... is not an override this stack reads")


def render(value: Any) -> str:
    """A setting's value as text, for conditions and messages: true/false, str() of numbers, compact
    JSON of lists and mappings."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)
