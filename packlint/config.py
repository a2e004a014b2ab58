"""Project configuration: discovered like ruff's, merged with the command line (the command line wins).

For each checked file, the closest of these, from the file's directory upwards, is its configuration
(in one directory the first that exists wins):

    .packlint.toml      top-level keys
    packlint.toml       top-level keys
    pyproject.toml      the [tool.packlint] table (a pyproject.toml without it is passed over)

`--config FILE` uses that file for every checked file; `--isolated` uses none. Resolution is cached per
directory. Every error names the file, the key and (where it can be found) the line: exit status 2.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from packlint.errors import PacklintError
from packlint.findings import SEVERITY_RANK
from packlint.globs import path_glob_regex
from packlint.regex import LazyRegex

CONFIG_NAMES = (".packlint.toml", "packlint.toml", "pyproject.toml")
# a pyproject.toml that never mentions [tool.packlint] is passed over without parsing any TOML
_TOOL_TABLE = LazyRegex(r"^\s*\[\s*tool\s*\.\s*packlint\b|^\s*tool\s*\.\s*packlint\b|\btool\s*=\s*\{", re.M)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# key -> (kind, description for errors)
KEYS: dict[str, tuple[str, str]] = {
    "select": ("codes", "a list of rule codes, code prefixes or names"),
    "ignore": ("codes", "a list of rule codes, code prefixes or names"),
    "fail-on": ("level", "one of 'error', 'warning', 'info'"),
    "severity": ("severity", "a table of rule code -> 'error' | 'warning' | 'info'"),
    "rule-files": ("paths", "a list of paths to rule tables (relative to the config file)"),
    "per-file-ignores": ("globcodes", "a table of glob -> list of rule codes"),
    "exclude": ("globs", "a list of globs (relative to the config file's directory)"),
    "env": ("env", "a table of NAME -> string value"),
    "known-env": ("names", "a list of environment variable names"),
    "code-base": ("dirs", "a list of directories holding the launched code (relative to the config file)"),
    "path-map": ("pathmap", "a table of container path prefix -> local directory (relative to the config file)"),
    "extend-select": ("codes", "a list of rule codes, code prefixes or names enabled on top of `select`"),
    "doc-url": ("url", "a URL template for each rule's documentation ({code}, {code_lower}, {name}, {anchor})"),
    "stack-versions": ("stackversions", 'a table of stack -> version (e.g. trl = "0.18")'),
    "megatron-version": (
        "megatron",
        "a Megatron-LM release of the shipped flag snapshots ('core_v0.14.0', '0.14', 'main')",
    ),
}
# the rule's section in the generated rule reference (packlint.rule_docs.anchor names it)
DEFAULT_DOC_URL = "https://github.com/packlint/packlint/blob/main/docs/rules-reference.md#{anchor}"


class ConfigFile:
    """One validated configuration file. `values` holds the keys it sets (TOML names)."""

    def __init__(self, path: Path, table: str, values: dict[str, Any], text: str) -> None:
        self.path = path
        self.dir = path.parent
        self.table = table  # "" (top level) or "tool.packlint"
        self.values = values
        self.text = text

    def key_ref(self, key: str) -> str:
        """`pyproject.toml:12: [tool.packlint] select` (the line when it can be found)."""
        line = _key_line(self.text, key, self.table)
        where = f"{_show(self.path)}:{line}" if line else _show(self.path)
        prefix = f"[{self.table}] " if self.table else ""
        return f"{where}: {prefix}{key}"

    def origin(self, key: str) -> str:
        line = _key_line(self.text, key, self.table)
        prefix = f"[{self.table}]." if self.table else ""
        return f"{_show(self.path)}{':' + str(line) if line else ''} ({prefix}{key})"


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _key_line(text: str, key: str, table: str) -> int | None:
    lines = text.split("\n")
    start = 0
    if table:
        pat = re.compile(r"^\s*\[\s*" + re.escape(table).replace(r"\.", r"\s*\.\s*") + r"\s*\]")
        start = next((i for i, ln in enumerate(lines) if pat.match(ln)), 0)
    key_pat = re.compile(r'^\s*(?:"' + re.escape(key) + r'"|' + re.escape(key) + r")\s*[=.]")
    for i in range(start, len(lines)):
        if key_pat.match(lines[i]):
            return i + 1
    for i, ln in enumerate(lines):  # e.g. [tool.packlint.severity] sub-table headers
        if re.match(r"^\s*\[[^\]]*\b" + re.escape(key) + r"\b", ln):
            return i + 1
    return None


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    return tomllib


def load_config_file(path: str | Path, *, explicit: bool = False) -> ConfigFile | None:
    """Read and validate one file. A pyproject.toml without [tool.packlint] gives None (unless named
    with --config, where it is an error)."""
    from packlint.safe_io import CONFIG_LIMIT, read_bounded

    path = Path(path)
    try:  # (a regular file of at most 4 MiB: a FIFO or /dev/zero is refused before any read, Q11)
        text = read_bounded(path, CONFIG_LIMIT, "config file").decode("utf-8")
    except UnicodeDecodeError:
        raise PacklintError("config file is not UTF-8", path=str(path)) from None
    is_pyproject = path.name == "pyproject.toml"
    if is_pyproject and not _TOOL_TABLE.search(text) and not explicit:
        return None
    tomllib = _toml()
    from packlint import toml_bounds

    try:  # (bounded before parsing: a 40 KB dotted key took 1.6 GB, audit R07)
        raw = toml_bounds.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PacklintError(f"invalid TOML: {exc}", path=str(path)) from None
    except toml_bounds.TomlLimitError as exc:
        raise PacklintError(f"TOML over packlint's limits: {exc}", path=str(path), line=exc.line or None) from None
    table = ""
    if is_pyproject:
        tool = raw.get("tool")
        section = tool.get("packlint") if isinstance(tool, dict) else None
        if section is None:
            if explicit:
                raise PacklintError("no [tool.packlint] table in this pyproject.toml", path=str(path))
            return None
        if not isinstance(section, dict):
            raise PacklintError("[tool.packlint] must be a table", path=str(path))
        raw, table = section, "tool.packlint"
    elif isinstance(raw.get("tool"), dict) and isinstance(raw["tool"].get("packlint"), dict) and len(raw) == 1:
        raw, table = raw["tool"]["packlint"], "tool.packlint"  # [tool.packlint] in packlint.toml: accepted
    cfg = ConfigFile(path.resolve(), table, {}, text)
    cfg.values = _validate(cfg, raw)
    return cfg


def _validate(cfg: ConfigFile, raw: dict) -> dict[str, Any]:
    """Each key checked by the check of its kind (`KEYS`), its value normalised (codes split on commas,
    paths resolved against the config file's directory)."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in KEYS:
            import difflib

            close = difflib.get_close_matches(key.replace("_", "-"), list(KEYS), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(KEYS)})"
            raise PacklintError(f"{cfg.key_ref(key)}: unknown key{hint}")
        kind, desc = KEYS[key]
        out[key] = _CHECKS[kind](_KeyCheck(cfg, key, desc), value)
    return out


class _KeyCheck:
    """What a check needs to word its error: `file: [table.]key: message`, and the expected shape."""

    def __init__(self, cfg: ConfigFile, key: str, desc: str) -> None:
        self.cfg, self.key, self.desc = cfg, key, desc

    def error(self, message: str) -> PacklintError:
        return PacklintError(f"{self.cfg.key_ref(self.key)}: {message}")

    def expected(self, value: Any) -> PacklintError:
        return self.error(f"expected {self.desc}, got {_type(value)}")


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _check_str_list(c: _KeyCheck, value: Any, kind: str) -> list:
    if not _is_str_list(value):
        raise c.expected(value)
    if kind == "names":
        bad = [x for x in value if not _NAME.match(x)]
        if bad:
            raise c.error(f"{bad[0]!r} is not an environment variable name")
    if kind == "codes":
        value = [code.strip() for v in value for code in v.split(",") if code.strip()]
    if kind == "paths":
        resolved = []
        for p in value:
            full = (c.cfg.dir / p) if not os.path.isabs(p) else Path(p)
            if not full.is_file():
                raise c.error(f"rule file {p!r} not found (looked for {full})")
            resolved.append(str(full))
        value = resolved
    return list(value)


def _check_dirs(c: _KeyCheck, value: Any) -> list[str]:
    if not _is_str_list(value):
        raise c.expected(value)
    dirs = []
    for p in value:
        full = Path(p) if os.path.isabs(p) else c.cfg.dir / p
        if not full.is_dir():
            raise c.error(f"directory {p!r} not found (looked for {full})")
        dirs.append(str(full.resolve()))
    return dirs


def _check_pathmap(c: _KeyCheck, value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise c.expected(value)
    return [(k, str((Path(v) if os.path.isabs(v) else c.cfg.dir / v).resolve())) for k, v in value.items()]


def _check_url(c: _KeyCheck, value: Any) -> str:
    if not isinstance(value, str):
        raise c.expected(value)
    import string

    try:  # only plain placeholders: no width, conversion, attribute or index (Q9: `{code:>300000000}`)
        for _lit, field, spec, conv in string.Formatter().parse(value):
            if field is not None and (spec or conv or field not in ("code", "code_lower", "name", "anchor")):
                raise ValueError(
                    f"only plain placeholders are allowed, not {{{field}{'!' + conv if conv else ''}"
                    f"{':' + spec if spec else ''}}}"
                )
        if len(value) > 2048:
            raise ValueError(f"longer than 2048 characters ({len(value)})")
        value.format(code="PK001", code_lower="pk001", name="x", anchor="pk001-x-error")
    except (KeyError, IndexError, ValueError) as exc:
        shown = value if len(value) <= 80 else value[:60] + "..."
        raise c.error(
            f"bad template {shown!r}: {exc} (placeholders: {{code}}, {{code_lower}}, {{name}}, {{anchor}})"
        ) from None
    return value


def _check_level(c: _KeyCheck, value: Any) -> str:
    if value not in SEVERITY_RANK:
        raise c.error(f"expected {c.desc}, got {value!r}")
    return value


def _check_severity(c: _KeyCheck, value: Any) -> dict:
    if not isinstance(value, dict):
        raise c.expected(value)
    for code, level in value.items():
        if level not in SEVERITY_RANK:
            raise c.error(f"{code}: expected 'error', 'warning' or 'info', got {level!r}")
    return dict(value)


def _check_globcodes(c: _KeyCheck, value: Any) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise c.expected(value)
    table = {}
    for glob, codes in value.items():
        if isinstance(codes, str):
            codes = [codes]
        if not _is_str_list(codes):
            raise c.error(f"{glob!r}: expected a list of rule codes, got {_type(codes)}")
        table[glob] = [code.strip() for v in codes for code in v.split(",") if code.strip()]
    return table


def _check_env(c: _KeyCheck, value: Any) -> dict:
    if not isinstance(value, dict):
        raise c.expected(value)
    for name, v in value.items():
        if not _NAME.match(name):
            raise c.error(f"{name!r} is not an environment variable name")
        if not isinstance(v, str):
            raise c.error(f'{name}: expected a string, got {_type(v)} (write {name} = "{_toml_str(v)}")')
    return dict(value)


def _check_stack_versions(c: _KeyCheck, value: Any) -> dict:
    from packlint.configs import STACKS

    if not isinstance(value, dict):
        raise c.expected(value)
    for name, v in value.items():
        if name not in STACKS:
            raise c.error(f"{name!r} is not a stack packlint knows (one of {', '.join(STACKS)})")
        if not isinstance(v, str) or not re.match(r"^\d+(\.\d+)*", v):
            raise c.error(f'{name}: expected a version string such as "0.18", got {v!r}')
    return dict(value)


def _check_megatron(c: _KeyCheck, value: Any) -> str:
    from packlint.codebase.snapshots import normalize_version, release_names

    name = normalize_version(value) if isinstance(value, str) else None
    if name is None:
        raise c.error(f"expected {c.desc}, got {value!r} (known: {', '.join(release_names()) or 'none'})")
    return name


# one check per kind of key (the first field of `KEYS`)
_CHECKS: dict[str, Any] = {
    "codes": lambda c, v: _check_str_list(c, v, "codes"),
    "globs": lambda c, v: _check_str_list(c, v, "globs"),
    "names": lambda c, v: _check_str_list(c, v, "names"),
    "paths": lambda c, v: _check_str_list(c, v, "paths"),
    "dirs": _check_dirs,
    "pathmap": _check_pathmap,
    "url": _check_url,
    "level": _check_level,
    "severity": _check_severity,
    "globcodes": _check_globcodes,
    "env": _check_env,
    "megatron": _check_megatron,
    "stackversions": _check_stack_versions,
}


def _toml_str(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _type(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return f"a string ({v!r})"
    if isinstance(v, (int, float)):
        return f"a number ({v!r})"
    if isinstance(v, list):
        return "a list" + (" with a non-string item" if v else "")
    if isinstance(v, dict):
        return "a table"
    return type(v).__name__


# ---------------------------------------------------------------------------------------------- globs


def glob_matches(pattern: str, base: Path, path: str) -> bool:
    """Like ruff: a pattern without '/' matches any path component (a file or directory name); one
    with '/' matches the path relative to `base` (the config file's directory)."""
    try:
        rel = Path(os.path.abspath(path)).relative_to(base).as_posix()
    except ValueError:
        rel = None
    pat = pattern.rstrip("/")
    rx = path_glob_regex(pat[2:] if pat.startswith("./") else pat)
    if "/" not in pat:
        parts = (rel or Path(path).as_posix()).split("/")
        return any(rx.match(p) for p in parts)
    return rel is not None and bool(rx.match(rel))


# ---------------------------------------------------------------------------------------------- settings


class CliSettings:
    """What the command line says (None / empty: not given)."""

    def __init__(
        self,
        *,
        select: list[str] | None = None,
        ignore: list[str] | None = None,
        fail_on: str | None = None,
        rule_files: list[str] | None = None,
        env: dict[str, str] | None = None,
        known_env: list[str] | None = None,
        config: str | None = None,
        isolated: bool = False,
        code_bases: list[str] | None = None,
        path_maps: list[tuple[str, str]] | None = None,
        code_reading: bool = True,
        code_cache: bool = True,
        extend_select: list[str] | None = None,
        megatron_version: str | None = None,
    ) -> None:
        self.select = select or None
        self.extend_select = extend_select or []
        self.ignore = ignore or []
        self.fail_on = fail_on
        self.rule_files = rule_files or []
        self.env = env or {}
        self.known_env = known_env or []
        self.config = config
        self.isolated = isolated
        self.code_bases = code_bases or []  # --code-base (absolute)
        self.path_maps = path_maps or []  # --path-map PREFIX=DIR (DIR absolute)
        self.code_reading = code_reading  # False with --no-code-base
        self.code_cache = code_cache  # False with --no-cache
        self.megatron_version = megatron_version


class Settings:
    """The settings in effect for one file, each with its origin (default / file:key / command line)."""

    FIELDS = (
        "select",
        "ignore",
        "fail-on",
        "severity",
        "rule-files",
        "per-file-ignores",
        "exclude",
        "env",
        "known-env",
        "code-base",
        "path-map",
        "doc-url",
        "megatron-version",
        "stack-versions",
    )

    def __init__(self) -> None:
        self.config: ConfigFile | None = None
        self.doc_url = DEFAULT_DOC_URL
        self.select: list[str] = ["ALL"]
        self.ignore: list[str] = []
        self.fail_on = "error"
        self.severity: dict[str, str] = {}
        self.rule_files: list[str] = []
        self.per_file_ignores: list[tuple[str, list[str]]] = []
        self.exclude: list[str] = []
        self.env: dict[str, str] = {}
        self.known_env: list[str] = []
        self.code_bases: list[str] = []
        self.path_maps: list[tuple[str, str]] = []
        self.code_reading = True
        self.code_cache = True
        self.megatron_version: str | None = None  # pins the Megatron-LM flag snapshot (issue 10)
        self.stack_versions: dict[str, str] = {}  # stack -> version, when neither code nor install says (issue 20)
        self.origins: dict[str, str] = {k: "default" for k in self.FIELDS}

    @property
    def base(self) -> Path:
        return self.config.dir if self.config else Path.cwd()

    def ignores_for(self, path: str) -> list[str]:
        codes: list[str] = []
        for glob, cs in self.per_file_ignores:
            if glob_matches(glob, self.base, path):
                codes.extend(cs)
        return codes

    def excluded(self, path: str) -> bool:
        return any(glob_matches(g, self.base, path) for g in self.exclude)

    def code_options(self):
        """How to find and read the launched code (packlint.codebase.CodeOptions)."""
        from packlint.codebase.options import CodeOptions

        return CodeOptions(
            list(self.code_bases),
            list(self.path_maps),
            self.code_reading,
            self.code_cache,
            megatron_version=self.megatron_version,
        )

    def table_key(self) -> tuple:
        return tuple(self.rule_files)

    def to_json(self) -> dict:
        return {
            "config_file": str(self.config.path) if self.config else None,
            "settings": {
                "select": self.select,
                "ignore": self.ignore,
                "fail-on": self.fail_on,
                "severity": self.severity,
                "rule-files": self.rule_files,
                "per-file-ignores": dict(self.per_file_ignores),
                "exclude": self.exclude,
                "env": self.env,
                "known-env": self.known_env,
                "code-base": self.code_bases,
                "path-map": dict(self.path_maps),
                "doc-url": self.doc_url,
                "megatron-version": self.megatron_version,
                "stack-versions": self.stack_versions,
            },
            "origins": dict(self.origins),
        }


def merge(cfg: ConfigFile | None, cli: CliSettings) -> Settings:
    """One file's settings: each key from its config file, then from the command line, which wins or
    adds as the key's origin says (`packlint config` shows them)."""
    s = Settings()
    s.config = cfg
    v = cfg.values if cfg else {}
    origin = cfg.origin if cfg else str  # no file: no key of `v` is present, so it is never called
    _merge_selection(s, v, origin, cli)
    if "fail-on" in v:
        s.fail_on, s.origins["fail-on"] = v["fail-on"], origin("fail-on")
    if cli.fail_on:
        s.fail_on, s.origins["fail-on"] = cli.fail_on, "command line (--fail-on)"
    if "severity" in v:
        s.severity, s.origins["severity"] = dict(v["severity"]), origin("severity")
    if "rule-files" in v:
        s.rule_files, s.origins["rule-files"] = list(v["rule-files"]), origin("rule-files")
    if cli.rule_files:
        prev = s.origins["rule-files"]
        s.rule_files = s.rule_files + [str(Path(p)) for p in cli.rule_files]
        s.origins["rule-files"] = (
            "command line (--rule-file)" if prev == "default" else f"{prev} + command line (--rule-file)"
        )
    if "per-file-ignores" in v:
        s.per_file_ignores = list(v["per-file-ignores"].items())
        s.origins["per-file-ignores"] = origin("per-file-ignores")
    if "exclude" in v:
        s.exclude, s.origins["exclude"] = list(v["exclude"]), origin("exclude")
    if "env" in v:
        s.env, s.origins["env"] = dict(v["env"]), origin("env")
    if cli.env:
        prev = s.origins["env"]
        s.env = {**s.env, **cli.env}
        s.origins["env"] = "command line (--env)" if prev == "default" else f"{prev} + command line (--env, wins)"
    if "doc-url" in v:
        s.doc_url, s.origins["doc-url"] = v["doc-url"], origin("doc-url")
    if "known-env" in v:
        s.known_env, s.origins["known-env"] = list(v["known-env"]), origin("known-env")
    if cli.known_env:
        prev = s.origins["known-env"]
        s.known_env = list(dict.fromkeys(s.known_env + list(cli.known_env)))
        s.origins["known-env"] = (
            "command line (--known-env)" if prev == "default" else f"{prev} + command line (--known-env)"
        )
    if "code-base" in v:
        s.code_bases, s.origins["code-base"] = list(v["code-base"]), origin("code-base")
    if cli.code_bases:
        prev = s.origins["code-base"]
        s.code_bases = list(dict.fromkeys(list(cli.code_bases) + s.code_bases))
        s.origins["code-base"] = (
            "command line (--code-base)" if prev == "default" else f"command line (--code-base) + {prev}"
        )
    if "path-map" in v:
        s.path_maps, s.origins["path-map"] = list(v["path-map"]), origin("path-map")
    if cli.path_maps:
        prev = s.origins["path-map"]
        s.path_maps = list(cli.path_maps) + s.path_maps
        s.origins["path-map"] = (
            "command line (--path-map)" if prev == "default" else f"command line (--path-map) + {prev}"
        )
    s.code_reading, s.code_cache = cli.code_reading, cli.code_cache
    if "stack-versions" in v:
        s.stack_versions, s.origins["stack-versions"] = dict(v["stack-versions"]), origin("stack-versions")
    if "megatron-version" in v:
        s.megatron_version, s.origins["megatron-version"] = v["megatron-version"], origin("megatron-version")
    if cli.megatron_version:
        s.megatron_version, s.origins["megatron-version"] = cli.megatron_version, "command line (--megatron-version)"
    return s


def _merge_selection(s: Settings, v: dict[str, Any], origin, cli: CliSettings) -> None:
    """select / ignore / extend-select as a stack, like ruff's: the config's select and ignore, then
    the command line's; a command-line --select starts over (the config's select and ignore are
    dropped), --ignore adds."""
    if "select" in v:
        s.select, s.origins["select"] = list(v["select"]), origin("select")
    if "ignore" in v:
        s.ignore, s.origins["ignore"] = list(v["ignore"]), origin("ignore")
    if cli.select:
        s.select, s.origins["select"] = list(cli.select), "command line (--select)"
        if s.ignore:
            s.ignore, s.origins["ignore"] = [], "default (the command line's --select replaces the config's)"
    if "extend-select" in v and not cli.select:
        s.select = s.select + [c for c in v["extend-select"] if c not in s.select]
        s.origins["select"] = f"{s.origins['select']} + {origin('extend-select')}"
    if getattr(cli, "extend_select", None):
        s.select = s.select + [c for c in cli.extend_select if c not in s.select]
        s.origins["select"] = f"{s.origins['select']} + command line (--extend-select)"
    if cli.ignore:
        prev = s.origins["ignore"]
        s.ignore = s.ignore + list(cli.ignore)
        s.origins["ignore"] = (
            "command line (--ignore)" if prev.startswith("default") else f"{prev} + command line (--ignore)"
        )


class Resolver:
    """Settings per checked file, resolved once per directory."""

    def __init__(self, cli: CliSettings) -> None:
        self.cli = cli
        self._dirs: dict[str, ConfigFile | None] = {}
        self._files: dict[str, ConfigFile | None] = {}
        self._settings: dict[int, Settings] = {}
        self._explicit: ConfigFile | None = None
        if cli.config and not cli.isolated:
            self._explicit = load_config_file(cli.config, explicit=True)

    def config_for_dir(self, directory: str) -> ConfigFile | None:
        if self.cli.isolated:
            return None
        if self._explicit is not None:
            return self._explicit
        d = os.path.abspath(directory)
        chain = []
        found: ConfigFile | None = None
        while True:
            if d in self._dirs:
                found = self._dirs[d]
                break
            chain.append(d)
            found = self._in_dir(d)
            if found is not None:
                break
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        for c in chain:
            self._dirs[c] = found
        return found

    def _in_dir(self, d: str) -> ConfigFile | None:
        for name in CONFIG_NAMES:
            p = os.path.join(d, name)
            if p in self._files:
                if self._files[p] is not None:
                    return self._files[p]
                continue
            cfg = None
            if os.path.isfile(p):
                cfg = load_config_file(p)
            self._files[p] = cfg
            if cfg is not None:
                return cfg
        return None

    def settings_for(self, path: str) -> Settings:
        if path in ("-", ""):
            directory = os.getcwd()
        elif os.path.isdir(path):
            directory = os.path.abspath(path)
        else:
            directory = os.path.dirname(os.path.abspath(path))
        cfg = self.config_for_dir(directory)
        key = id(cfg)
        if key not in self._settings:
            self._settings[key] = merge(cfg, self.cli)
        return self._settings[key]


def validate_codes(settings: Settings, table) -> None:
    """Rule codes named in the config must exist in the rule table (the file and key in the error)."""
    from packlint.engine import unknown_selectors

    cfg = settings.config
    if cfg is None:
        return
    v = cfg.values
    for key in ("select", "ignore", "extend-select"):
        bad = unknown_selectors(table, v.get(key, []))
        if bad:
            from packlint.engine import unknown_selectors_message

            raise PacklintError(f"{cfg.key_ref(key)}: {unknown_selectors_message(table, bad)}")
    for code in v.get("severity", {}):
        if table.by_code(code) is None:
            from packlint.engine import unknown_selectors_message

            hint = unknown_selectors_message(table, [code])
            hint = hint[hint.index("(did you mean") : hint.index("?)") + 2] + " " if "(did you mean" in hint else ""
            raise PacklintError(f"{cfg.key_ref('severity')}: unknown rule code {code!r} {hint}(see `packlint rules`)")
    for glob, codes in v.get("per-file-ignores", {}).items():
        bad = unknown_selectors(table, codes)
        if bad:
            raise PacklintError(
                f"{cfg.key_ref('per-file-ignores')}: {glob!r}: unknown rule code or name: {', '.join(bad)}"
            )
