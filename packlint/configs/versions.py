"""Which version of its stack a launch runs: from the code base beside the script (package metadata,
`__version__`, `version.py`, `pyproject.toml`) when found, else from the distribution installed in
packlint's own environment (importlib.metadata, which reads metadata and never imports the package),
else from a pin in packlint's configuration (`stack-versions = { trl = "0.18" }`); unknown otherwise.
"""

from __future__ import annotations

import os
import re

from packlint.caches import memo, once_per_run, run_memo
from packlint.regex import LazyRegex

# stack -> the package directories (relative to a checkout root) whose version files say the version
PACKAGE_DIRS: dict[str, tuple[str, ...]] = {
    "llamafactory": ("src/llamafactory", "llamafactory"),
    "trl": ("trl",),
    "axolotl": ("src/axolotl", "axolotl"),
    "swift": ("swift",),
    "megatron-swift": ("swift",),
    "hf-trainer": ("src/transformers",),
    "deepspeed": ("deepspeed",),
    "verl": ("verl",),
    "openrlhf": ("openrlhf",),
    "megatron-bridge": ("src/megatron/bridge",),
    "nemo-rl": ("nemo_rl",),
    "internvl": ("internvl_chat/internvl", "internvl"),
    "xtuner": ("xtuner",),
    "torchtitan": ("torchtitan",),
    "megatron-lm": ("megatron/core",),
}
VERSION_FILES = (
    "version.py",
    "__version__.py",
    "__init__.py",
    "package_info.py",
    "extras/env.py",
    "version.txt",
    "version/version",  # verl: verl/version/version holds the release as plain text
)
_VERSION = LazyRegex(r"""^\s*(?:__version__|VERSION|version)\s*(?::\s*str\s*)?=\s*["']([0-9][^"']*)["']""", re.M)
_PKG_INFO = LazyRegex(r"^\s*(MAJOR|MINOR|PATCH)\s*=\s*(\d+)", re.M)
MAX_VERSION_FILE = 256 * 1024

_CACHE: dict[tuple, dict] = memo()


def _roots(script_dir: str | None, workdir: str | None = None) -> list[str]:
    """Where the stack's code and pins are looked for: the launch's working directory first when known
    (stack_config_workdir), then the script's directory and its parents up to the checkout's root."""
    if not script_dir:
        return [workdir] if workdir else []
    out = [workdir] if workdir else []
    d = os.path.abspath(script_dir)
    for _ in range(16):  # (BradleyWang0416/LLaMA-Factory: a script 8 folders below the checkout root)
        out.append(d)
        if os.path.exists(os.path.join(d, ".git")):
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out


def _read_small(path: str, limit: int = MAX_VERSION_FILE) -> str | None:
    from packlint.safe_io import read_regular

    data = read_regular(path, limit)
    return None if data is None else data.decode("utf-8", "replace")


def version_in_code(stack: str, script_dir: str | None, workdir: str | None = None) -> tuple[str, str] | None:
    """(version, where) from the stack's own source beside the script, else from the one sub-project of the
    checkout holding it (codebase/subprojects.py: MetaStone-S1's verl/verl, `pip install -e verl`), or None
    (several sub-projects saying different versions: the machine's choice)."""
    roots = _roots(script_dir, workdir)
    found = _version_under(stack, roots)
    if found is not None or not roots or not os.path.exists(os.path.join(roots[-1], ".git")):
        return found
    from packlint.codebase.subprojects import subprojects_holding

    tops = {p.split("/", 1)[0] for p in PACKAGE_DIRS.get(stack, ()) if not p.startswith("src/")}
    subs = sorted({d for top in tops for d in subprojects_holding(roots[-1], top)})
    got = [v for v in (_version_under(stack, [d]) for d in subs) if v is not None]
    return got[0] if got and all(v[0] == got[0][0] for v in got) else None


def _version_under(stack: str, roots: list[str]) -> tuple[str, str] | None:
    for root in roots:
        for pkg in PACKAGE_DIRS.get(stack, ()):
            d = os.path.join(root, pkg)
            if not os.path.isdir(d):
                continue
            for name in VERSION_FILES:
                path = os.path.join(d, name)
                text = _read_small(path) if os.path.isfile(path) else None
                if text is None:
                    continue
                if name in ("version.txt", "version/version"):
                    v = text.strip().split()[0] if text.strip() else ""
                    if re.match(r"^\d+\.\d+", v):
                        return v, path
                    continue
                if name == "package_info.py":
                    parts = dict(_PKG_INFO.findall(text))
                    if "MAJOR" in parts and "MINOR" in parts:
                        return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', '0')}", path
                m = _VERSION.search(text)
                if m:
                    return m.group(1), path
    return None


# requirement files whose exact pins (`trl==0.19.1`) say which release a checkout runs
_REQ_GLOBS = (  # the checkout's own requirements (not requirements/<extra>.txt: one optional feature's pins)
    "requirements*.txt",
    "environment.yml",
    "environment.yaml",
    "setup.py",
    "pyproject.toml",
    # one file per environment or feature (agentic-backdoor's requirements/sft.txt, which its setup_sft.sh installs):
    # read when no file above pins the package, and only where every one of them that pins it agrees
    "requirements/*.txt",
    # what a lock resolved (`uv sync`, `poetry install`): read when no file above pins the package exactly
    "uv.lock",
    "poetry.lock",
)
_LOCKS = ("uv.lock", "poetry.lock")
MAX_LOCK_FILE = 8 * 1024 * 1024
# a pin where packaging's PEP 508 parser cannot read the line (setup.py's `install_requires=["trl==0.15.0",`);
# PEP 508's parenthesized form `trl (==0.15.0)` (Poetry 2's default) too
_PIN = LazyRegex(
    r"""(?:^|["'\s,\[])([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*\(?\s*===?\s*v?([0-9][0-9A-Za-z.+-]*)""", re.M
)  # noqa: E501


_INSTALL_REQUIRES = LazyRegex(r"install_requires\s*=\s*\[")
# transformers' setup.py shape (open-r1 and its forks copy it): the pins in a `_deps = [...]` table, and
# `install_requires = [deps["trl"], ...]` naming the runtime ones
_DEPS_TABLE = LazyRegex(r"^_deps\s*=\s*\[(.*?)^\]", re.S | re.M)
_DEPS_NAMED = LazyRegex(r"""deps\[\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']\s*\]""")
_QUOTED = LazyRegex(r"""["']([^"'\n]+)["']""")
_COMMENT = LazyRegex(r"#[^\n]*")


def _runtime_part(path: str, text: str) -> str:
    """The part of a project file that says what the project runs with: pyproject.toml's
    `[project] dependencies` (not an optional group: `probe = ["transformers==5.24.0"]` is an extra),
    setup.py's `install_requires` list; requirement files and environment.yml whole."""
    name = os.path.basename(path)
    if name in _LOCKS:
        return _locked(text)
    if name == "pyproject.toml":
        from packlint.config import _toml

        toml = _toml()
        try:
            doc = toml.loads(text)
            deps = doc.get("project", {}).get("dependencies", [])
            poetry = doc.get("tool", {}).get("poetry", {}).get("dependencies", {})
        except (toml.TOMLDecodeError, AttributeError):
            return ""
        lines = [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
        return "\n".join(lines + (_poetry_pins(poetry) if isinstance(poetry, dict) else []))
    if name == "setup.py":
        required = [_COMMENT.sub("", _bracketed(text, m.end())) for m in _INSTALL_REQUIRES.finditer(text)]
        return "\n".join(required + _named_deps(text, required))
    return text


_POETRY_EXACT = LazyRegex(r"^\s*(?:==?\s*)?(\d[0-9A-Za-z.+-]*)\s*$")


def _poetry_pins(deps: dict) -> list[str]:
    """Poetry 1's `[tool.poetry.dependencies]`: `trl = "0.4.7"` (or `"==0.4.7"`, `{ version = "0.4.7" }`) is an
    exact pin, read as `trl==0.4.7`; `^`, `~`, `>=`, `*` are ranges."""
    out = []
    for name, spec in deps.items():
        v = spec.get("version") if isinstance(spec, dict) else spec
        m = _POETRY_EXACT.match(v) if isinstance(v, str) and isinstance(name, str) else None
        if m is not None and name.lower() != "python":
            out.append(f"{name}=={m.group(1)}")
    return out


def _locked(text: str) -> str:
    """A lock file's resolved packages as `name==version` lines (uv.lock, poetry.lock: `[[package]]` tables
    with `name` and `version`); a package locked at two versions (uv's forks by marker) is left out."""
    from packlint.config import _toml

    toml = _toml()
    try:
        packages = toml.loads(text).get("package", [])
    except (toml.TOMLDecodeError, AttributeError):
        return ""
    seen: dict[str, set[str]] = {}
    for p in packages if isinstance(packages, list) else []:
        if isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("version"), str):
            # (a package locked from a git source is a commit, whatever version string it carries: Manto/
            # chess-reasoning-zero locks verl "0.1" from a fork's branch months after the 0.1 release)
            source = p.get("source")
            vcs = isinstance(source, dict) and (source.get("type") in ("git", "hg", "svn") or "git" in source)
            seen.setdefault(p["name"], set()).add("" if vcs else p["version"])
    return "\n".join(f"{n}=={next(iter(v))}" for n, v in seen.items() if len(v) == 1 and "" not in v)


def _line_pin(line: str, want: str) -> str | None:
    """The exact release a requirement line pins the distribution `want` (PEP 503-normalised) at, or None:
    each quoted string on the line (setup.py, pyproject.toml) or the line itself is read by packaging's PEP 508
    parser (`trl==0.15.0`, `trl (==0.15.0)`, `trl[vllm]==0.15.0; python_version>'3.9'`), a line it cannot read
    by a pattern; a range or a wildcard (`>=`, `==0.15.*`) pins no release."""
    if _spelt(want).search(line) is None:
        return None  # (no name on the line is `want`'s: no parse, and packaging's ~40 ms import only where one is)
    return _parsed_pin(line, want)


def _parsed_pin(line: str, want: str) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement

    text = line.strip()
    if text.startswith("#"):
        return None
    candidates = [text[2:] if text.startswith("- ") else text, *_QUOTED.findall(text)]
    for c in candidates:
        try:
            req = Requirement(c.split(" #", 1)[0].strip())
        except InvalidRequirement:
            continue
        if re.sub(r"[-_.]+", "-", req.name).lower() != want:
            continue
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
            return specs[0].version
        return None
    for m in _PIN.finditer(text):
        if re.sub(r"[-_.]+", "-", m.group(1)).lower() == want:
            return m.group(2).rstrip(".,\"')")
    return None


_SPELT: dict[str, re.Pattern[str]] = {}


def _spelt(want: str) -> re.Pattern[str]:
    """`want` (a PEP 503-normalised name) as a line may spell it: any case, each `-` a run of `-`, `_` or `.`. Every
    name _line_pin reads from a line is a piece of the line, so a line without this has no pin of `want`."""
    found = _SPELT.get(want)
    if found is None:
        found = _SPELT[want] = re.compile("[-_.]+".join(re.escape(part) for part in want.split("-")), re.IGNORECASE)
    return found


def _bracketed(text: str, start: int) -> str:
    """The text of a Python list from just after its `[` to its matching `]` (nested brackets counted:
    `[deps["trl"], ...]`; the rest of the file when it never closes)."""
    depth = 1
    for i in range(start, len(text)):
        c = text[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:]


def _named_deps(text: str, required: list[str]) -> list[str]:
    """The `_deps` entries that `install_requires` names through `deps["name"]` (transformers' setup.py
    shape): `"trl==0.16.0"` for `deps["trl"]`; a commented-out entry or reference is none."""
    names = {re.sub(r"[-_.]+", "-", n).lower() for part in required for n in _DEPS_NAMED.findall(part)}
    table = _DEPS_TABLE.search(text)
    if not names or table is None:
        return []
    out = []
    for entry in _QUOTED.findall(_COMMENT.sub("", table.group(1))):
        head = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", entry.strip())
        if head is not None and re.sub(r"[-_.]+", "-", head.group(0)).lower() in names:
            out.append(entry)
    return out


def _file_pin(path: str, pattern: str, want: str) -> str | None:
    """The version one requirement file pins the (normalised) distribution `want` to exactly, or None."""
    text = _read_small(path, MAX_LOCK_FILE if pattern in _LOCKS else MAX_VERSION_FILE)
    return next((v for line in _runtime_part(path, text or "").splitlines() if (v := _line_pin(line, want))), None)


def pinned_in_tree(dist: str | None, script_dir: str | None, workdir: str | None = None) -> tuple[str, str] | None:
    """(version, file) of an exact pin of the distribution in the checkout's requirement files
    (requirements*.txt, environment.yml's pip list, setup.py install_requires, pyproject.toml
    dependencies, then uv.lock / poetry.lock), nearest directory first; None when no file pins it exactly
    (`>=` is no release)."""
    if not dist:
        return None
    want = re.sub(r"[-_.]+", "-", dist).lower()
    for root in _roots(script_dir, workdir):
        # (the scripts of a folder share its parents: once per run)
        pin = once_per_run(_ROOT_PINS, (want, root), lambda root=root: _root_pin(want, root))
        if pin is not None:
            return pin
    return None


_ROOT_PINS: dict[tuple[str, str], tuple[str, str] | None] = run_memo()


def _root_pin(want: str, root: str) -> tuple[str, str] | None:
    import glob

    for pattern in _REQ_GLOBS:
        pins = []
        for path in sorted(glob.glob(os.path.join(glob.escape(root), pattern)))[:20]:
            found = _file_pin(path, pattern, want)
            if found is not None:
                pins.append((found, path))
                if "/" not in pattern:
                    return pins[0]
        if pins and len({v for v, _ in pins}) == 1:
            return pins[0]  # (requirements/*.txt: the files that pin it agree)
    return None


def other_pins(
    dist: str | None, script_dir: str | None, version: str, workdir: str | None = None
) -> list[tuple[str, str]]:
    """Exact pins of the distribution in the checkout's top-level requirement files (each directory from the
    script's up to its checkout root) that name another version than `version` (wshiman/Action-R1: `src/r1-v/
    setup.py` pins trl 0.14.0, the root's requirements.txt, a freeze of the author's environment, trl 0.16.1)."""
    if not dist:
        return []
    import glob

    want = re.sub(r"[-_.]+", "-", dist).lower()
    out: list[tuple[str, str]] = []
    for root in _roots(script_dir, workdir):
        for pattern in _REQ_GLOBS:
            if "/" in pattern:
                continue
            for path in sorted(glob.glob(os.path.join(glob.escape(root), pattern)))[:20]:
                found = _file_pin(path, pattern, want)
                if found is not None and found != version and (found, path) not in out:
                    out.append((found, path))
    return out


def tree_version(stack: str, dist: str | None, script_dir: str | None, workdir: str | None = None) -> dict:
    """The release of a stack the checkout itself says it runs: a vendored copy's version file, else an
    exact pin in its requirement files. `{"value", "source"}` or `{}` (never the installed package:
    packlint's environment is not the checked tree's)."""
    in_code = version_in_code(stack, script_dir, workdir)
    if in_code is not None:
        from packlint.configs import _shown

        return {"value": in_code[0], "source": f"the vendored {stack} ({_shown(in_code[1])})"}
    pin = pinned_in_tree(dist, script_dir, workdir)
    if pin is not None:
        from packlint.configs import _shown

        out = {"value": pin[0], "source": f"the pin {dist}=={pin[0]} in {_shown(pin[1])}"}
        others = other_pins(dist, script_dir, pin[0], workdir)
        if others:
            out["disputed"] = "; ".join(f"{_shown(f)} pins {v}" for v, f in others[:2])
        return out
    return {}


def installed_version(dist: str | None) -> str | None:
    """The installed distribution's version (metadata only). PACKLINT_IGNORE_INSTALLED=1 turns this
    source off (the test suite sets it, so snapshots do not depend on what the venv holds)."""
    if not dist or os.environ.get("PACKLINT_IGNORE_INSTALLED") == "1":
        return None
    # what importlib.metadata.version finds, without its import cost (~20 ms): the first
    # `<name>-<version>.dist-info` / `.egg-info` on sys.path, the name normalised as PEP 503 does
    want = re.sub(r"[-_.]+", "_", dist).lower()
    import sys

    for entry in sys.path:
        names = _listdir(entry or ".")
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            stem = name.rsplit(".", 1)[0]
            dname, _, version = stem.partition("-")
            if re.sub(r"[-_.]+", "_", dname).lower() == want and version:
                return version.split("-py")[0]
    return None


_LISTDIR: dict[str, list[str]] = memo()


def _listdir(path: str) -> list[str]:
    found = _LISTDIR.get(path)
    if found is None:
        try:
            found = os.listdir(path) if os.path.isdir(path) else []
        except OSError:
            found = []
        _LISTDIR[path] = found
    return found


def stack_version(stack: str, dist: str | None, script_dir: str | None, pins: dict[str, str] | None) -> dict:
    """`{"value": "0.9.3", "source": "..."}` or `{"unknown": "..."}`."""
    key = (stack, dist, script_dir, tuple(sorted((pins or {}).items())))
    found = _CACHE.get(key)
    if found is not None:
        return found
    in_code = version_in_code(stack, script_dir)
    pin = pinned_in_tree(dist, script_dir) if in_code is None else None
    if in_code is not None:
        from packlint.configs import _shown

        out = {"value": in_code[0], "source": f"code base ({_shown(in_code[1])})"}
    elif pin is not None:
        from packlint.configs import _shown

        out = {"value": pin[0], "source": f"pinned in the checkout ({_shown(pin[1])})"}
    else:
        v = installed_version(dist)
        if v is not None:
            out = {"value": v, "source": f"installed distribution {dist}"}
        elif pins and stack in pins:
            out = {"value": pins[stack], "source": "packlint configuration (stack-versions)"}
        else:
            out = {
                "unknown": f"{stack}'s version is unknown: no version file in the code base, {dist or stack} is not "
                f"installed here, and no stack-versions pin"
            }
    _CACHE[key] = out
    return out
