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
from typing import Any

from packlint.regex import LazyRegex

_TABLE: dict | None = None


def table() -> dict:
    """packlint/configs/stacks.toml, parsed once per process; the parsed table is kept in packlint's
    cache directory as JSON data (a plain script reads one small JSON file, not a TOML parse)."""
    global _TABLE
    if _TABLE is None:
        from packlint.configs.stacks_table import cached_table

        path = os.path.join(os.path.dirname(__file__), "stacks.toml")
        _TABLE = _compile_table(cached_table(path))
    return _TABLE


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
            if hit and not _names_its_kind(entry, flags):
                hit = False
        if hit and entry["_flags"] and (entry["_launchers"] or entry["_module"] or entry["_program"]):
            hit = any(f in flags for f in entry["_flags"])
        if hit:
            return entry
    return None


def _names_its_kind(entry: dict, flags: dict) -> bool:
    """A stack told by a flag alone reads a file of its own kind: `--config-file x.py` (detectron2's
    LazyConfig, hustvl/Vim's `tools/lazyconfig_train_net.py`) is no Megatron-Bridge YAML. A computed
    value may be one."""
    from packlint.values import Known

    suffixes = tuple((entry.get("file") or {}).get("suffixes") or ())
    if not suffixes:
        return True
    for name in entry["_flags"]:
        for occ in flags.get(name) or ():
            v = occ.args[0] if getattr(occ, "args", None) else None
            if not isinstance(v, Known) or v.text.lower().endswith(suffixes):
                return True
    return False


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
            # no `.git` above: the tree named on the command line is the checkout (a copy or an archive of one)
            dirs = _chain_to_named(os.path.abspath(script_dir))
    cwd = os.getcwd()
    if cwd not in dirs:
        dirs.append(cwd)
    return dirs


def _chain_to_named(d: str) -> list[str]:
    """`d` and its parents up to the directory named on the command line that holds it (at most 8 levels),
    else `d` alone."""
    from packlint.scope import named_top

    top = named_top(d)
    if top is None:
        return [d]
    chain = [d]
    real = os.path.realpath(d)
    while real != top and len(chain) < 8:
        real, d = os.path.dirname(real), os.path.dirname(d)
        chain.append(d)
    return chain if real == top else [chain[0]]


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


def _over_limits(err: Exception) -> bool:
    from packlint.configs.files import ConfigLimitError

    return isinstance(err, ConfigLimitError)


_NEAR: list[str | None] = [None]  # the directory of the script whose launch is being read (scope.outside)


LFS_POINTER = "version https://git-lfs.github.com/spec/v1"


def read_config_file(path: str, fmt: str, dialect: str, near: str | None = None):
    """(CNode root, None) or (None, ConfigFileError): read once per process per file version, through
    safe_io, and only inside the checkout (packlint.scope; `near`: the file or directory that names it,
    default the script whose launch is read)."""
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

    from packlint.scope import outside

    away = outside(path, near if near is not None else _NEAR[0])
    if away is not None:  # (R02/R03: named, never read, never quoted)
        return None, ConfigFileError(away, unread=True)
    from packlint.errors import PacklintError
    from packlint.safe_io import open_regular, read_open

    try:  # one O_NONBLOCK open, fstat on the descriptor: a FIFO swapped in never blocks (R14/R15)
        fd, st = open_regular(path, 1 << 62, "", display=path)
    except PacklintError as exc:
        return None, ConfigFileError(f"not read: {exc.message}", unread=True)
    try:
        key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, fmt, dialect)
        found = _FILE_CACHE.get(key)
        if found is not None:
            return found
        if st.st_size > MAX_CONFIG_BYTES:
            out: tuple = (None, ConfigFileError(f"the file is over {MAX_CONFIG_BYTES // (1024 * 1024)} MiB: not read"))
        else:
            try:
                text = read_open(fd, st, MAX_CONFIG_BYTES, "", path).decode("utf-8-sig")
                if text.startswith(LFS_POINTER):
                    # a Git LFS pointer (XpastaX/PerfCoder's data/ds_config/*.json, `*.json filter=lfs` in
                    # .gitattributes): the content is what git-lfs fetches on the machine that cloned it
                    why = "a Git LFS pointer: its content is fetched by git-lfs where the checkout is cloned"
                    raise ConfigFileError(why, unread=True)
                out = (load_text(text, fmt, dialect), None)
            except UnicodeDecodeError:
                out = (None, ConfigFileError("the file is not UTF-8 text"))
            except PacklintError as exc:
                out = (None, ConfigFileError(f"not read: {exc.message}", unread=True))
            except ConfigFileError as exc:
                out = (None, exc)
    finally:
        os.close(fd)
    if len(_FILE_CACHE) >= MAX_FILE_CACHE:
        _FILE_CACHE.clear()
    _FILE_CACHE[key] = out
    return out


from packlint.configs.interpolation import resolve_interpolations  # noqa: E402
from packlint.configs.launch import launch_config  # noqa: E402
from packlint.configs.merge import (  # noqa: E402  (the public names, defined in the modules below)
    _loc,
    _span_loc,
    flatten,
    render,
)

__all__ = [
    "STACKS",
    "_loc",
    "_span_loc",
    "flatten",
    "launch_config",
    "match_program",
    "render",
    "resolve_interpolations",
    "table",
]
