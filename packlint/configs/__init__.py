"""The launch's configuration: the config files a launch names, merged as its stack merges them.

`launch_config(...)` gives a launch variant's `config` block of the launch model (see
docs/config-files.md and packlint.model_types.ConfigJSON): the stack, its version, the files read,
and every setting with the file:line:col that set it. The per-stack facts (which argument names a
file, its format, how overrides merge, which keys nest files) are data: packlint/configs/stacks.toml.

A launch of no known stack and no config file costs one dictionary lookup and a few regex tests:
the YAML/TOML readers are imported only when a file is read.
"""

from __future__ import annotations

import os
import re
from typing import Any

from packlint.regex import LazyRegex
from packlint.values import Known, Unknown

_TABLE: dict | None = None


def table() -> dict:
    """packlint/configs/stacks.toml, parsed once per process; the parsed table is kept in packlint's
    cache directory as JSON data (a plain script reads one small JSON file, not a TOML parse)."""
    global _TABLE
    if _TABLE is None:
        path = os.path.join(os.path.dirname(__file__), "stacks.toml")
        _TABLE = _cached_table(path)
    return _TABLE


def _cached_table(path: str) -> dict:
    """The parsed table, from a JSON copy in packlint's cache directory when it is current (data only:
    nothing in a cache file can run code), else parsed from the TOML and written there."""
    import json

    try:
        st = os.stat(path)
    except OSError:
        st = None
    cache_dir = _cache_dir()  # the rule table's (packlint.rule_table._cache_dir), without importing it
    cache = None
    raw = None
    if cache_dir is not None and st is not None:
        cache = cache_dir / f"stacks-{st.st_mtime_ns}-{st.st_size}.json"
        # a regular file owned by this user only (never a FIFO, a device or a link: docs/security.md)
        from packlint.safe_io import read_cache_file

        data = read_cache_file(cache)
        try:
            raw = json.loads(data) if data is not None else None
        except ValueError:
            raw = None
        if not isinstance(raw, dict) or not isinstance(raw.get("program"), list):
            raw = None
    if raw is None:
        raw = _parse_toml(path)
        if cache is not None:
            from packlint.errors import PacklintError
            from packlint.safe_io import atomic_write

            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(cache, json.dumps(raw).encode(), what="stacks cache", replace_any=True)
            except (OSError, PacklintError):
                pass
    return _compile_table(raw)


def _cache_dir():
    from pathlib import Path

    if os.environ.get("PACKLINT_NO_CACHE"):
        return None
    import sys

    rt = sys.modules.get("packlint.rule_table")  # `--no-cache` turns every cache off (docs/security.md)
    if rt is not None and getattr(rt, "_CACHE_OFF", False):
        return None
    base = os.environ.get("PACKLINT_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "packlint" if xdg else Path.home() / ".cache" / "packlint"


def _parse_toml(path: str) -> dict:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _compile_table(data: dict) -> dict:
    for entry in data["program"]:
        entry["_launchers"] = set(entry["launcher"].split("|")) if "launcher" in entry else set()
        entry["_module"] = LazyRegex(entry["module"]) if "module" in entry else None
        entry["_program"] = LazyRegex(entry["program"]) if "program" in entry else None
        entry["_flags"] = tuple(entry["flag"].split("|")) if "flag" in entry else ()
    return data


STACKS = (
    "llamafactory",
    "trl",
    "axolotl",
    "swift",
    "megatron-swift",
    "hf-trainer",
    "deepspeed",
    "verl",
    "openrlhf",
    "megatron-bridge",
    "nemo-rl",
    "internvl",
    "xtuner",
    "torchtitan",
    "megatron-lm",
)


def match_program(program: str | None, launchers: list[str], flags: dict) -> dict | None:
    """The stacks.toml entry of a launch: by launcher, module or program path (and a flag when the
    entry names one), else by a flag alone."""
    launcher = launchers[-1] if launchers else None
    module = program[3:].strip() if program and program.startswith("-m ") else None
    for entry in table()["program"]:
        hit = False
        if (
            launcher is not None
            and launcher in entry["_launchers"]
            or module is not None
            and entry["_module"] is not None
            and entry["_module"].search(module)
            or program
            and module is None
            and entry["_program"] is not None
            and entry["_program"].search(program)
        ):
            hit = True
        elif not entry["_launchers"] and entry["_module"] is None and entry["_program"] is None:
            hit = any(f in flags for f in entry["_flags"])
            if hit and launcher in ("llamafactory-cli train", "swift sft", "trl sft"):
                hit = False
        if hit and entry["_flags"] and (entry["_launchers"] or entry["_module"] or entry["_program"]):
            hit = any(f in flags for f in entry["_flags"])
        if hit:
            return entry
    return None


# ---------------------------------------------------------------------------------------------- paths


def _search_dirs(script_dir: str | None) -> list[str]:
    """Where a relative path in a script may point: the script's directory and its parents up to the
    checkout (a directory with .git, at most 8 levels up; without one, the script's directory only),
    then the current directory (a script is usually run from the checkout's root or its own directory)."""
    dirs: list[str] = []
    if script_dir:
        d = os.path.abspath(script_dir)
        chain = []
        for _ in range(8):
            chain.append(d)
            if os.path.exists(os.path.join(d, ".git")):
                dirs = chain
                break
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        if not dirs:
            dirs = [os.path.abspath(script_dir)]
    cwd = os.getcwd()
    if cwd not in dirs:
        dirs.append(cwd)
    return dirs


def resolve_path(text: str, base_dirs: list[str]) -> str | None:
    text = os.path.expanduser(text)
    if os.path.isabs(text):
        return text if os.path.isfile(text) or text in _TEXT_OVERRIDES else None
    for d in base_dirs:
        p = os.path.join(d, text)
        if os.path.isfile(p) or os.path.abspath(p) in _TEXT_OVERRIDES:
            return p
    return None


def _shown(path: str) -> str:
    from pathlib import Path

    from packlint.source import display_path

    return display_path(Path(path))


# ---------------------------------------------------------------------------------------------- files

_FILE_CACHE: dict[tuple, Any] = {}
MAX_FILE_CACHE = 256


_TEXT_OVERRIDES: dict[str, bytes] = {}


def set_text_override(path: str, data: bytes) -> None:
    """Read `path` as `data` (the editor's unsaved text, or stdin named by --stdin-filename)."""
    if len(_TEXT_OVERRIDES) > 16:
        _TEXT_OVERRIDES.clear()
    _TEXT_OVERRIDES[os.path.abspath(path)] = data


def clear_text_override(path: str) -> None:
    """Read `path` from disk again (after set_text_override)."""
    _TEXT_OVERRIDES.pop(os.path.abspath(path), None)


def read_config_file(path: str, fmt: str, dialect: str):
    """(CNode root, None) or (None, ConfigFileError): read once per process per file version."""
    from packlint.configs.files import MAX_CONFIG_BYTES, ConfigFileError, load_text

    override = _TEXT_OVERRIDES.get(os.path.abspath(path))
    if override is not None:
        try:
            if len(override) > MAX_CONFIG_BYTES:
                raise ConfigFileError(f"the file is over {MAX_CONFIG_BYTES // (1024 * 1024)} MiB: not read")
            return load_text(override.decode("utf-8-sig"), fmt, dialect), None
        except UnicodeDecodeError:
            return None, ConfigFileError("the file is not UTF-8 text")
        except ConfigFileError as exc:
            return None, exc

    try:
        st = os.stat(path)
    except OSError as exc:
        return None, ConfigFileError(f"cannot read: {exc.strerror}")
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size, fmt, dialect)
    found = _FILE_CACHE.get(key)
    if found is not None:
        return found
    if st.st_size > MAX_CONFIG_BYTES:
        out: tuple = (None, ConfigFileError(f"the file is over {MAX_CONFIG_BYTES // (1024 * 1024)} MiB: not read"))
    else:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            text = data.decode("utf-8-sig")
            out = (load_text(text, fmt, dialect), None)
        except UnicodeDecodeError:
            out = (None, ConfigFileError("the file is not UTF-8 text"))
        except OSError as exc:
            out = (None, ConfigFileError(f"cannot read: {exc.strerror}"))
        except ConfigFileError as exc:
            out = (None, exc)
    if len(_FILE_CACHE) >= MAX_FILE_CACHE:
        _FILE_CACHE.clear()
    _FILE_CACHE[key] = out
    return out


# ---------------------------------------------------------------------------------------------- settings


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
        return resolve_plain(text, "omegaconf")  # a plain scalar: no YAML parser needed
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
        elif name.startswith("--") and file_read and "file_overrides" in entry:
            # not an override once the file is read: the stack's loader takes `--name` for a key of its
            # own (OmegaConf.from_cli: {'--name': None}); the YAML's value stays (rules/stack_*.toml)
            cfg.setdefault("ignored_flags", []).append({"name": name.split("=", 1)[0], **loc})
        elif "none" not in styles and not name.startswith("-"):
            # a bare `key=value` where the stack takes none: the program decides what it means
            cfg.setdefault("notes", []).append(f"{name}=... is not an override this stack reads")


_INTERP = LazyRegex(r"\$\{([^${}]*)\}")


def resolve_interpolations(settings: dict) -> None:
    """OmegaConf `${a.b}`: the referenced setting's value where it is known; `${oc.env:X}`, relative
    and unresolvable references make the setting unknown."""
    for key, s in list(settings.items()):
        if s.get("value") == "???":  # OmegaConf's MISSING: a mandatory value nobody set
            settings[key] = {
                **{k: x for k, x in s.items() if k != "value"},
                "unknown": "??? (OmegaConf's mandatory value, not set)",
            }
    for _ in range(4):  # chains `${a}` -> `${b}`: a few rounds
        changed = False
        for key, s in list(settings.items()):
            v = s.get("value")
            if not isinstance(v, str) or "${" not in v:
                continue
            m = _INTERP.fullmatch(v)
            if m is not None:
                ref = m.group(1)
                target = settings.get(ref) if ":" not in ref and not ref.startswith(".") else None
                if (
                    target is not None
                    and "value" in target
                    and not (isinstance(target["value"], str) and "${" in target["value"])
                ):
                    settings[key] = {**s, "value": target["value"], "interpolation": v}
                    changed = True
                    continue
                if target is None or "unknown" in target:
                    settings[key] = {
                        **{k: x for k, x in s.items() if k != "value"},
                        "unknown": f"the interpolation {v} cannot be resolved",
                    }
                    changed = True
                continue
            parts = []
            ok = True
            for ref in _INTERP.findall(v):
                target = settings.get(ref) if ":" not in ref and not ref.startswith(".") else None
                if (
                    target is None
                    or "value" not in target
                    or (isinstance(target["value"], str) and "${" in target["value"])
                ):
                    ok = False
                    break
                parts.append(target["value"])
            if ok:
                text = _substitute(v, parts)
                settings[key] = {**s, "value": text, "interpolation": v}
                changed = True
            elif all(":" in r or r.startswith(".") or r in settings for r in _INTERP.findall(v)):
                continue  # waits for another round
            else:
                settings[key] = {
                    **{k: x for k, x in s.items() if k != "value"},
                    "unknown": f"the interpolation {v} cannot be resolved",
                }
                changed = True
        if not changed:
            break
    for key, s in list(settings.items()):
        v = s.get("value")
        if isinstance(v, str) and _INTERP.search(v):
            settings[key] = {
                **{k: x for k, x in s.items() if k != "value"},
                "unknown": f"the interpolation {v} cannot be resolved",
            }


def _substitute(text: str, parts: list) -> str:
    it = iter(parts)
    return _INTERP.sub(lambda _m: render(next(it)), text)


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


# ---------------------------------------------------------------------------------------------- launches


def _stack_by_keys(flag: str | None, flags: dict, first: Any, script_dir: str | None) -> dict | None:
    """The stacks.toml entry of the stack a config file belongs to, recognised by its keys
    (packlint.configs.standalone.recognise), or None."""
    from packlint.configs.files import format_of
    from packlint.configs.standalone import recognise

    word = None
    if flag is not None:
        occ = flags[flag][-1]
        word = occ.args[0] if occ.args else None
    elif first is not None:
        word = first
    if not isinstance(word, Known):
        return None
    found = resolve_path(word.text, _search_dirs(script_dir))
    if found is None:
        return None
    fmt = format_of(found)
    root, err = read_config_file(found, fmt, "pyyaml")
    if err is not None or root is None:
        return None
    stack = recognise(root.plain(), fmt)
    return next((e for e in table()["program"] if e["stack"] == stack), None) if stack else None


def _file_word(entry_file: dict, flags: dict, positionals: list) -> tuple[str | None, Any, Any]:
    """(how it is named, the Value naming the file, the flag occurrence) or (None, None, None)."""
    suffixes = tuple(entry_file.get("suffixes", ()))
    for name in entry_file.get("flags", []):
        occs = flags.get(name)
        if occs:
            occ = occs[-1]
            v = occ.args[0] if occ.args else None
            if suffixes and isinstance(v, Known) and not v.text.lower().endswith(suffixes):
                continue  # `--config configs/7B_sft.py` (InternEvo's Python config): not a file of this kind
            return name, v, occ
    pos = entry_file.get("positional")
    if pos is not None and len(positionals) > pos:
        v = positionals[pos]
        if isinstance(v, Unknown):
            return "positional", v, None
        if not suffixes or v.text.lower().endswith(suffixes):
            return "positional", v, None
    return None, None, None


def launch_config(
    program: str | None,
    launchers: list[str],
    flags: dict,
    launcher_flags: dict,
    positionals: list,
    script_dir: str | None,
    pins: dict[str, str] | None = None,
    script: Any = None,
) -> dict | None:
    """The `config` block of one launch variant, or None for a launch of no known stack that names
    no config file (the common case: nothing is read)."""
    entry = match_program(program, launchers, flags)
    file_flags = entry.get("file", {}).get("flags", ()) if entry is not None else ()
    if entry is not None and entry.get("only_with_file") and not any(f in flags for f in file_flags):
        return None
    generic = None
    if entry is None:
        g = table()["generic"]
        named = next((f for f in g["flags"] if f in flags), None)
        first = positionals[0] if positionals else None
        by_position = isinstance(first, Known) and first.text.lower().endswith(tuple(g["suffixes"]))
        by_launcher = any(n in launcher_flags for n in ("--config_file", "--config-file"))
        if named is None and not by_position and not by_launcher:
            return None
        generic = g
        # a program packlint does not know given a config file of a stack it recognises by its keys
        # (`python src/train.py x.yaml` in a LLaMA-Factory checkout): that stack's reading of it
        known = _stack_by_keys(named, flags, first if by_position else None, script_dir)
        if known is not None:
            entry, generic = known, None
            if named is not None:
                entry = {**known, "file": {"flags": [named]}}
            else:
                entry = {**known, "file": {"positional": 0, "suffixes": list(g["suffixes"])}}
    cfg: dict[str, Any] = {
        "stack": entry["stack"] if entry else None,
        "files": [],
        "settings": {},
        "sections": {},
    }
    if entry is not None:
        from packlint.configs.versions import stack_version

        cfg["stack_version"] = stack_version(entry["stack"], entry.get("dist"), script_dir, pins)
    else:
        cfg["stack_version"] = {"unknown": "the stack is not known"}
    dirs = _search_dirs(script_dir)
    global _SCRIPT
    _SCRIPT = script
    incomplete: list[str] = []
    settings: dict = cfg["settings"]
    if entry is not None:
        spec: dict = entry.get("file", {})
    else:
        g = generic or {}
        spec = {"flags": g.get("flags", []), "positional": 0, "suffixes": g.get("suffixes", [])}
    dialect = (entry or generic or {}).get("yaml", "pyyaml")
    section = entry.get("section", "main") if entry else "main"
    config_flags: set[str] = set(spec.get("flags", []))
    target = settings if section == "main" else cfg["sections"].setdefault(section, {})
    if entry is not None and entry.get("inherit_defaults"):
        cfg["_inherit"] = True
    file_named = False
    if spec.get("hydra"):
        cfg["_hydra"] = True
        from packlint.configs.hydra import compose_hydra

        compose_hydra(cfg, spec, flags, dirs, target, incomplete, program)
        config_flags |= {"--config-path", "--config-name", "--config-dir", "-cp", "-cn"}
    else:
        how, word, occ = _file_word(spec, flags, positionals)
        file_named = how is not None
        if how is not None:
            fmt = entry.get("format") if entry and entry.get("format") else None
            problems = incomplete if section == "main" else []
            _read_into(cfg, section, how, word, occ, fmt, dialect, dirs, target, problems, section)
            if problems and section != "main":
                cfg.setdefault("unknown_sections", {})[section] = "; ".join(problems)
    if entry is not None and "none" in entry.get("overrides", ["none"]) and flags:
        # the program's own flags are settings packlint does not map to configuration keys
        incomplete.append(f"{entry['stack']}'s command-line flags are not read as configuration keys")
    if entry is not None and section == "main":
        _apply_overrides(entry, cfg, flags, config_flags, settings, file_named)
        if dialect == "omegaconf" and entry.get("resolve", True):
            resolve_interpolations(settings)
    elif generic is not None:
        # how this program merges its command line over the file is unknown: what it names is unknown
        for name in flags:
            if name in config_flags:
                continue
            key = name.lstrip("-+~")
            for k in [k for k in settings if k == key or k.startswith(key + ".") or k.replace("_", "-") == key]:
                settings[k] = {
                    **{x: y for x, y in settings[k].items() if x != "value"},
                    "unknown": f"the command line gives {name}; how {program} merges it over the file is unknown",
                }
    # files named inside the merged settings (`deepspeed: ds.json`)
    for key, sec in ((entry or {}).get("nested") or {}).items():
        s = settings.get(key)
        if s is None:
            continue
        if "unknown" in s:
            cfg["sections"][sec] = {}
            cfg.setdefault("unknown_sections", {})[sec] = s["unknown"]
            continue
        if isinstance(s.get("value"), str) and s["value"].lower().endswith((".json", ".yaml", ".yml")):
            _read_nested(cfg, sec, s, dirs, dialect)
    # the launcher's own config (accelerate launch --config_file)
    launcher = launchers[-1] if launchers else None
    lf = table().get("launcher_files", {}).get(launcher or "")
    if lf is not None:
        occ = next((launcher_flags[f][-1] for f in lf["flags"] if launcher_flags.get(f)), None)
        if occ is not None:
            word = occ.args[0] if occ.args else None
            sec_settings = cfg["sections"].setdefault(lf["section"], {})
            _read_into(
                cfg, lf["section"], "launcher", word, occ, None, lf["yaml"], dirs, sec_settings, [], lf["section"]
            )
            for key, sec in (lf.get("nested") or {}).items():
                s = sec_settings.get(key)
                if s is not None and isinstance(s.get("value"), str):
                    _read_nested(cfg, sec, s, dirs, "pyyaml")
    cfg.pop("_inherit", None)
    cfg.pop("_hydra", None)
    if incomplete:
        cfg["incomplete"] = "; ".join(incomplete)
    if not cfg["sections"]:
        del cfg["sections"]
    return cfg


def _read_into(cfg, section, how, word, occ, fmt, dialect, dirs, target: dict, incomplete: list, role: str) -> None:
    from packlint.configs.files import format_of

    named = _span_loc(getattr(word, "span", None) or (occ.span if occ is not None else None))
    if word is None or isinstance(word, Unknown):
        reason = word.reason if isinstance(word, Unknown) else "not given"
        cfg["files"].append({"role": role, "unknown": f"the config file's name is {reason}", "named_at": named or None})
        incomplete.append(f"the {role} config file's name is {reason}")
        return
    path_text = word.text
    fmt = fmt or format_of(path_text)
    found = resolve_path(path_text, dirs)
    record: dict[str, Any] = {"role": role, "path": path_text, "format": fmt, "named_at": named or None}
    cfg["files"].append(record)
    if found is None:
        writer = _written_by_script(path_text) or _named_by_caller(word)
        if writer is None and not os.path.isabs(path_text) and _changes_directory():
            writer = "it changes directory before the launch, so the relative path is relative to an unknown place"
        if writer is None and os.path.dirname(path_text) in ("", "."):
            # a bare name is looked up in the job's working directory, which packlint does not know (a
            # previous run's output: Megatron-DeepSpeed's ds_evalharness.sh names the training run's
            # ds_config_<run>.json); a path with a directory names a file of the checkout
            writer = "it names a bare file, looked up in the job's working directory, which is not known"
        if writer is not None:
            # `cat <<EOT > $DS_CONFIG` before the launch (Megatron-DeepSpeed's scripts): not missing
            how = writer if writer.startswith("it ") else f"writes it itself ({writer})"
            record["unknown"] = f"{path_text} is not found, but the script {how}"
            incomplete.append(record["unknown"])
            return
        record["missing"] = True
        _note_machine(record, path_text, dirs)
        incomplete.append(f"the config file {path_text} was not found")
        return
    shown = _shown(found)
    record["file"] = shown
    root, err = read_config_file(found, fmt, dialect)
    if err is not None:
        record["error"] = err.message
        record["error_at"] = {
            "file": shown,
            "line": err.line,
            "column": err.column,
            "end_line": err.line,
            "end_column": err.column,
        }
        incomplete.append(f"{path_text} could not be read ({err.message})")
        return
    if root.value is not None and not isinstance(root.value, dict):
        record["error"] = "the file's top level is not a mapping"
        record["error_at"] = _loc(shown, root)
        incomplete.append(f"{path_text} is not a mapping")
        return
    body = root.value or {}
    if role == "main" and "defaults" in body and not cfg.get("_hydra"):
        if cfg.get("_inherit"):
            # NeMo-RL's load_config: `defaults: parent.yaml` (or a list), beside the file, merged first
            _inherit(found, root, dialect, target, incomplete, 0)
            return
        # a `defaults:` key this program gives its own meaning: what it pulls in is unknown
        incomplete.append(f"{path_text} has a `defaults:` key that packlint does not follow for this program")
    flatten(root, shown, "", target)


def _inherit(path: str, root, dialect: str, target: dict, incomplete: list, depth: int) -> None:
    from packlint.configs.files import CNode

    body = dict(root.value or {})
    parents = body.pop("defaults", None)
    names: list | None = []
    if parents is not None:
        pv = parents.value
        if isinstance(pv, str):
            names = [pv]
        elif isinstance(pv, list) and all(isinstance(n.value, str) for n in pv):
            names = [n.value for n in pv]
        else:
            names = None
    if names is None or depth > 8:
        incomplete.append(f"{_shown(path)}: its `defaults:` is not followed")
    else:
        for name in names:
            parent = os.path.join(os.path.dirname(path), name)
            proot, err = read_config_file(parent, "yaml", dialect) if os.path.isfile(parent) else (None, None)
            if proot is None or not isinstance(proot.value, (dict, type(None))):
                incomplete.append(f"the parent config {name} of {_shown(path)} is not at hand")
                continue
            _inherit(parent, proot, dialect, target, incomplete, depth + 1)
    own: dict = {}
    flatten(CNode(body, root.line, root.column, root.end_line, root.end_column), _shown(path), "", own)
    for k, v in own.items():  # the child overrides what its parents set (OmegaConf.merge)
        for old in [o for o in target if o.startswith(k + ".") or k.startswith(o + ".")]:
            del target[old]
        target[k] = v


_SCRIPT: Any = None
_REDIRECT = LazyRegex(r"""(?:>>?|\btee\s+(?:-a\s+)?|\b(?:cp|mv|ln)\s+(?:-\S+\s+)*\S+\s+)\s*["']?([^\s;|&<>"']+)""")
_ASSIGN = LazyRegex(r"^\s*(?:export\s+|local\s+|declare\s+\S+\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.M)


_CD = LazyRegex(r"(?:^|[;&|(]|\bthen|\bdo)\s*(?:cd|pushd)\s", re.M)


def _changes_directory() -> bool:
    return _SCRIPT is not None and hasattr(_SCRIPT, "script_text") and _CD.search(_SCRIPT.script_text()) is not None


def _written_by_script(path_text: str) -> str | None:
    """The redirection (or cp/mv/ln) in the script that writes the file, directly or through a
    variable assigned a value naming it; None when the script does not write it. A redirection to a
    computed name of the same kind (`sed ... > ${config_json}` with `config_json="ds_config_${NAME}.json"`,
    Megatron-DeepSpeed's shape) may write it too."""
    if _SCRIPT is None or not hasattr(_SCRIPT, "script_text"):
        return None
    text = _SCRIPT.script_text()
    base = os.path.basename(path_text)
    if not base:
        return None
    ext = os.path.splitext(base)[1]
    assigned = [(m.group(1), m.group(2)) for m in _ASSIGN.finditer(text)]
    names_of_file = {n for n, v in assigned if base in v}
    computed = {n for n, v in assigned if "$" in v and ext and ext in v}
    for m in _REDIRECT.finditer(text):
        target = m.group(1)
        if base in target:
            return m.group(0).strip()
        for name in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", target):
            if name in names_of_file or name in computed:
                return m.group(0).strip()
        if "$" in target and ext and target.endswith(ext):
            return m.group(0).strip()
    return None


def _named_by_caller(word: Any) -> str | None:
    """The file's name is built from the script's positional arguments (`file=./train/$1.py`, checked
    without arguments, where `$1` is empty): it is the caller's file, not a missing one."""
    span = getattr(word, "span", None)
    if span is None or _SCRIPT is None or not hasattr(_SCRIPT, "script_text"):
        return None
    from packlint.interpret.guards import from_caller_arguments

    if from_caller_arguments(_SCRIPT.script_text(), span.line - 1, max(span.end_line, span.line) - 1):
        return "it names the file from the caller's arguments"
    return None


def _read_nested(cfg: dict, sec: str, s: dict, dirs: list[str], dialect: str) -> None:
    from packlint.values import Span

    span = Span(s["file"], s["line"], s["column"], s["end_line"], s["end_column"]) if s.get("file") else None
    word = Known(s["value"], span)
    target = cfg["sections"].setdefault(sec, {})
    sub: list[str] = []
    _read_into(cfg, sec, "nested", word, None, None, dialect, dirs, target, sub, sec)
    if sub:
        cfg.setdefault("unknown_sections", {})[sec] = "; ".join(sub)


__all__ = ["STACKS", "launch_config", "match_program", "render", "table"]


def _note_machine(record: dict[str, Any], path_text: str, dirs: list[str]) -> None:
    """A missing file the machine may hold (packlint.configs.elsewhere): its evidence, for PK601's cap."""
    from packlint.configs.elsewhere import missing_premise
    from packlint.evidence import to_json

    premise = missing_premise(path_text, dirs)
    if premise is not None:
        record["evidence"] = to_json(premise)
