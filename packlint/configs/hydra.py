"""Hydra composition as far as packlint can do it without Hydra: the primary config named by
`--config-path`/`--config-name` (or the program's own default), its `defaults:` list resolved from the
config directory (`- name`, `- group: option`, `- group@package: option`, `_self_`, `# @package`
headers), each value with file:line. What it cannot follow (an `override` entry, a group chosen on the
command line, a missing group file, interpolated choices) makes the configuration incomplete: keys it
does not hold are then unknown, never absent.

Hydra 1.3 semantics followed (hydra-core 1.3.8 is the test oracle): a config without `_self_` in its
defaults list has it appended (the config's own keys override its defaults); a group's default
package is the group path (`a/b` -> `a.b`); `_global_` is the root.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from packlint.caches import memo
from packlint.regex import LazyRegex

if TYPE_CHECKING:
    from packlint.values import Unknown

MAX_DEPTH = 12
_PACKAGE = LazyRegex(r"^\s*#\s*@package\s+(\S+)", re.M)


def _find_dir(text: str, dirs: list[str]) -> str | None:
    text = os.path.expanduser(text)
    if os.path.isabs(text):
        return text if os.path.isdir(text) else None
    for d in dirs:
        p = os.path.join(d, text)
        if os.path.isdir(p):
            return p
    return None


MAX_VENDOR_ENTRIES = 256  # directory entries looked at per level when searching a checkout for a vendored copy
MAX_VENDOR_DEPTH = 6  # directory levels inside the checkout searched for a vendored copy
MAX_VENDOR_LISTED = 2000  # directories listed in that search (breadth first: the nearest levels first)


_CODE_BASES: list[str] = []  # the run's --code-base directories (absolute), set by check and inspect


def set_code_bases(dirs: list[str] | tuple[str, ...]) -> None:
    """The directories given with `--code-base` (or the configuration's `code-base`) for this run: a stack's
    own config directory is looked for there too, after the checkout and before the installed package."""
    _CODE_BASES[:] = [d for d in dirs if d]


def stack_roots(
    rel: str, dirs: list[str], tied: list[str] | None = None, pythonpath: list[str] | tuple[str, ...] = ()
) -> list[str]:
    """Where the stack's code (`rel`, e.g. `verl/trainer`) may be: the search directories (the script's
    and its parents up to the checkout), the vendored copy at any level inside the checkout (bounded:
    `third_party/verl/verl/trainer`, `proj/src/verl/verl/trainer`) nearest the script, the `--code-base`
    directories (each, or a copy inside it), then the installed package (located, never imported). Where the
    checkout holds several copies equally near the script (sibling sub-projects, each with its own), all
    are listed and, when `tied` is given, put in it: which one runs is not known from the tree (so too
    for the only copy when it belongs to a sibling sub-project: `A/verl` of `A/setup.py`). A copy the
    launch's PYTHONPATH names (a relative entry, or one inside the checkout) comes first and decides."""
    roots = list(dirs)
    top = rel.split("/")[0] if rel and not os.path.isabs(rel) else ""
    if not top or top in (".", ".."):
        return roots
    # the script's own checkout: a directory of its chain (the working directory appended to `dirs` is another
    # tree: packlint's tests run from packlint's checkout, a user from anywhere)
    first = dirs[0] if dirs else ""
    checkout: str | None = next(
        (
            d
            for d in dirs
            if os.path.isdir(os.path.join(d, ".git")) and (d == first or first.startswith(d.rstrip(os.sep) + os.sep))
        ),
        None,
    )
    if checkout is None and first:
        # no `.git` above the script: the tree named on the command line is its checkout (scope.named_top)
        from packlint.scope import named_among

        checkout = named_among(dirs)
    if checkout is not None and not any(os.path.isdir(os.path.join(d, rel)) for d in dirs):
        named = _pythonpath_copies(rel, dirs, checkout, pythonpath)
        near = named or nearest_copies(_vendored(checkout, rel), dirs[: dirs.index(checkout) + 1])
        roots.extend(near)
        if tied is not None and not named and (len(near) > 1 or _sibling_project(near, checkout, dirs)):
            tied.extend(near)
    for base in _CODE_BASES:
        if base in roots:
            continue
        if os.path.isdir(os.path.join(base, rel)):
            roots.append(base)
        else:
            roots.extend(r for r in _vendored(base, rel) if r not in roots)
    return roots + _installed(top, roots)


def _pythonpath_copies(rel: str, dirs: list[str], checkout: str, pythonpath: list[str] | tuple[str, ...]) -> list[str]:
    """The first PYTHONPATH entry (relative to the script's directories, or absolute) that is inside the
    checkout and holds `rel`: the copy the launch imports (a path outside the checkout is the machine's)."""
    inside = checkout.rstrip(os.sep) + os.sep
    for entry in pythonpath[:16]:
        if "$" in entry or "<" in entry:
            continue
        places = [entry] if os.path.isabs(entry) else [os.path.join(d, entry) for d in dirs]
        for p in places:
            p = os.path.normpath(p)
            if (p + os.sep).startswith(inside) and os.path.isdir(os.path.join(p, rel)):
                return [p]
    return []


PROJECT_FILES = ("setup.py", "pyproject.toml", "setup.cfg")


def _sibling_project(near: list[str], checkout: str, dirs: list[str]) -> bool:
    """Whether the one copy is inside a sub-project of its own (`deepscaler-release/verl` beside
    `deepscaler-release/setup.py`) that the script is not in: a copy another part of the checkout uses."""
    if len(near) != 1:
        return False
    rel = os.path.relpath(near[0], checkout).split(os.sep)
    if len(rel) < 2 or rel[0] in ("..", "."):
        return False
    project = os.path.join(checkout, rel[0])
    if any(d == project or d.startswith(project + os.sep) for d in dirs):
        return False
    return any(os.path.isfile(os.path.join(project, f)) for f in PROJECT_FILES)


def nearest_copies(copies: list[str], chain: list[str]) -> list[str]:
    """Of the vendored copies, those nearest the script: inside the deepest directory of `chain` (the
    script's directory, then its parents up to the checkout) that holds any. A sub-project's own copy
    (`B/verl` for `B/scripts/run.sh`) wins over a sibling's (`A/verl`); copies equally near all stay."""
    for d in chain:
        inside = [c for c in copies if c.startswith(d.rstrip(os.sep) + os.sep)]
        if inside:
            return inside
    return list(copies)


_VENDORED: dict[tuple[str, str], list[str]] = memo()


def _vendored(checkout: str, rel: str) -> list[str]:
    """Directories inside the checkout (down to MAX_VENDOR_DEPTH levels) that hold `rel` (a vendored copy of
    the stack); looked up once per checkout and path in a process (a bounded breadth-first walk)."""
    key = (checkout, rel)
    found = _VENDORED.get(key)
    if found is None:
        found = _VENDORED[key] = _walk_vendored(checkout, rel)
        if len(_VENDORED) > 64:
            _VENDORED.clear()
            _VENDORED[key] = found
    return found


# a test suite's fixtures are no code a launch runs (packlint's own tests/fixtures/stacks/verl/* copies)
_TEST_DIRS = frozenset(("tests", "test", "fixtures", "testdata", "test_data"))


def _walk_vendored(checkout: str, rel: str) -> list[str]:
    """Breadth first, nearest first: every directory down to MAX_VENDOR_DEPTH levels inside the checkout
    (Tool-Star's `Tool_Star_RL/src/verl` is three), at most MAX_VENDOR_LISTED of them listed and
    MAX_VENDOR_ENTRIES entries each; hidden directories, virtual environments, caches and node_modules
    are skipped (packlint.discover.SKIP_DIRS), and so are test suites (`tests/`, `fixtures/`); symbolic links and
    a copy found are not entered."""
    from packlint.discover import SKIP_DIRS

    roots: list[str] = []
    level = [checkout]
    listed = 0
    for _depth in range(MAX_VENDOR_DEPTH):
        nxt = []
        for base in level:
            if listed >= MAX_VENDOR_LISTED:
                return roots
            listed += 1
            try:
                with os.scandir(base) as it:
                    entries = sorted((e for e in it), key=lambda e: e.name)[:MAX_VENDOR_ENTRIES]
            except OSError:
                continue
            for e in entries:
                if e.name.startswith(".") or e.name in SKIP_DIRS or e.name.lower() in _TEST_DIRS:
                    continue
                try:
                    if not e.is_dir():
                        continue
                    link = e.is_symlink()
                except OSError:
                    continue
                if os.path.isdir(os.path.join(e.path, rel)):
                    roots.append(e.path)
                elif not link and not os.path.isfile(os.path.join(e.path, "pyvenv.cfg")):
                    nxt.append(e.path)
        level = nxt
    return roots


_INSTALLED: dict[str, list[str]] = memo()


def _installed(top: str, roots: list[str]) -> list[str]:
    """The parent directory of the installed package `top` (located, never imported), when not in roots."""
    parents = _INSTALLED.get(top)
    if parents is None:
        try:
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(top)
            locations = list(spec.submodule_search_locations or []) if spec is not None else []
        except (ImportError, ValueError, OSError):
            locations = []
        parents = _INSTALLED[top] = [os.path.dirname(loc) for loc in locations[:1]]
    return [p for p in parents if p not in roots]


def _flag_text(flags: dict, *names: str) -> tuple[Any, Any]:
    """(the text of the last occurrence of the first of `names` given, or Unknown; that occurrence)."""
    from packlint.values import Unknown

    for n in names:
        occs = flags.get(n)
        if occs:
            occ = occs[-1]
            if not occ.args:
                return None, occ
            a = occ.args[0]
            return (Unknown(a.reason) if isinstance(a, Unknown) else a.text), occ
    return None, None


def _module_dir(program: str | None) -> str:
    """The directory of the file that declares @hydra.main, which a relative config path is relative to (the module
    `-m verl.trainer.main_ppo` -> verl/trainer/; `python3 third_party/verl/verl/trainer/main_ppo.py`)."""
    if program and program.startswith("-m "):
        return "/".join(program[3:].strip().split(".")[:-1])
    if program and program.endswith(".py"):
        return os.path.dirname(program)
    return ""


def compose_hydra(
    cfg: dict,
    spec: dict,
    flags: dict,
    dirs: list[str],
    target: dict,
    incomplete: list[str],
    program: str | None = None,
    candidates: list[str] | None = None,
    pythonpath: list[str] | tuple[str, ...] = (),
) -> None:
    """Compose the launch's Hydra config into `target`. Where several vendored copies equally near the
    script hold it, nothing is composed: the record names them and `candidates` (if given) gets their dirs."""
    from packlint.configs import _shown, _span_loc
    from packlint.values import Unknown

    path_text, path_occ = _flag_text(flags, "--config-path", "-cp", "--config-dir")
    name_text, name_occ = _flag_text(flags, "--config-name", "-cn")
    named = _span_loc(path_occ.span) if path_occ is not None else (_span_loc(name_occ.span) if name_occ else None)
    record: dict[str, Any] = {"role": "main", "format": "yaml", "named_at": named or None}
    cfg["files"].append(record)
    if isinstance(path_text, Unknown) or isinstance(name_text, Unknown):
        record["unknown"] = "the config path or name is unknown"
        incomplete.append("the Hydra config path or name is unknown")
        return
    module_dir = _module_dir(program)
    tied: list[str] = []
    roots = stack_roots(module_dir or spec["default_dir"], dirs, tied, pythonpath)
    config_dir = None
    if path_text is not None:
        if module_dir and not os.path.isabs(path_text):
            config_dir = _find_dir(os.path.join(module_dir, path_text), roots)
        config_dir = config_dir or _find_dir(path_text, dirs)
    else:
        default = os.path.join(module_dir, "config") if module_dir.endswith("trainer") else spec["default_dir"]
        config_dir = next((p for d in roots if os.path.isdir(p := os.path.join(d, default))), None)
    declared = _own_name(program, roots, module_dir, config_dir) if name_text is None and path_text is None else None
    own_dir = _own_name(program, roots, module_dir, config_dir, _CONFIG_PATH) if path_text is None else None
    path_shown = None
    if isinstance(own_dir, str) and os.path.normpath(own_dir) != "config":
        # the live @hydra.main's own config_path (NUSTM/CBT-Counselor: `config_path="xxx/counselor_configs"`, a
        # placeholder): relative to the program's file, where Hydra looks, not the stack's default directory
        copy = config_dir[: -len(os.path.join(module_dir, "config"))] if config_dir and module_dir else ""
        found = _find_dir(os.path.join(module_dir, own_dir), [copy] if copy else roots)
        if found is None:
            record["unknown"] = f"the config directory {own_dir} the program's @hydra.main names is not at hand"
            record["own_name"] = "unknown"
            incomplete.append(record["unknown"])
            return
        config_dir, path_shown = found, os.path.normpath(os.path.join(module_dir, own_dir))
    elif isinstance(own_dir, Unknown):
        declared = own_dir
    if isinstance(declared, Unknown):
        record["unknown"] = declared.reason
        record["own_name"] = "unknown"  # (the program's own config: no release's keys stand for it)
        incomplete.append(declared.reason)
        return
    name = name_text or declared or spec.get("default_name")
    if name and name.endswith((".yaml", ".yml")):
        name = name.rsplit(".", 1)[0]
    record["path"] = os.path.join(path_shown or path_text or spec.get("default_dir", ""), f"{name}.yaml")
    if config_dir is not None and _tied(record, config_dir, tied, (module_dir, path_text, spec["default_dir"])):
        incomplete.append(record["unknown"])
        if candidates is not None:
            candidates.extend(_tied_config_dirs(tied, module_dir, path_text, spec["default_dir"]))
        return
    if config_dir is None:
        # the program's source (and its config directory) is not beside the script: unknown, not missing
        record["unknown"] = f"the config directory {path_text or spec.get('default_dir')} is not at hand"
        _note_partial_package(record, module_dir, dirs)
        incomplete.append(record["unknown"])
        return
    primary = os.path.join(config_dir, f"{name}.yaml")
    if not os.path.isfile(primary):
        record["missing"] = True
        incomplete.append(f"the config {name}.yaml is not in {_shown(config_dir)}")
        return
    record["file"] = _shown(primary)
    state = {"incomplete": incomplete, "files": cfg["files"], "count": 0}
    _compose(config_dir, name or "", "", target, state, 0, primary=True)
    # command-line group choices (`actor=dp_actor` where `actor/` is a config group) are not followed
    for fname in flags:
        key = fname.lstrip("+~").split("@", 1)[0]  # `actor@actor_rollout_ref.actor=x`: the group is `actor`
        if not fname.startswith("-") and os.path.isdir(os.path.join(config_dir, key.replace(".", "/"))):
            incomplete.append(f"the command line chooses the config group {key}, which packlint does not compose")


# (the decorator as code, at a line's start: not a commented-out one above it, wjqii/graphrag-r2's vendored verl 0.1
# `# @hydra.main(config_path='config', config_name='ppo_trainer', ...)` over its `config_name='grpo_trainer'`)
_HYDRA_MAIN = re.compile(r"^[ \t]*@hydra\.main\(([^)]*)\)", re.M)
_CONFIG_NAME = re.compile(r"""\bconfig_name\s*=\s*(?:(["'])([\w./-]+)\1|([^,\s)]+))""")
_CONFIG_PATH = re.compile(r"""\bconfig_path\s*=\s*(?:(["'])([\w./ -]*)\1|([^,\s)]+))""")


def _note_partial_package(record: dict, module_dir: str, dirs: list[str]) -> None:
    """The checkout holds a partial copy of the stack's package (partial_package): the config is a fork's, no
    release's keys stand for it."""
    why = partial_package(dirs, module_dir.replace("/", ".") + ".x") if module_dir else None
    if why is not None:
        record["own_name"] = "unknown"
        record["unknown"] += f"; {why}"


def partial_package(roots: Any, module: str) -> str | None:
    """Why the code of `module` that runs is not known, where a root holds part of its top package: its
    `__init__.py` and other code, but not the module, nor the `version/version` file verl's `__init__` reads
    (AsadalJung/David-GRPO ships verl/__init__.py and verl/models/ only: the authors' fork runs, or the import
    stops). None otherwise (a whole copy, a release's copy with its version file, no copy)."""
    top = module.split(".", 1)[0]
    rel = module.replace(".", "/") + ".py"
    for root in roots:
        package = os.path.join(root, top)
        if not os.path.isfile(os.path.join(package, "__init__.py")) or os.path.exists(os.path.join(root, rel)):
            continue
        if os.path.exists(os.path.join(package, "version", "version")):
            continue
        try:  # (bounded: a directory of millions of entries is not listed whole)
            with os.scandir(package) as entries:
                names = [e.name for _, e in zip(range(MAX_VENDOR_ENTRIES), entries, strict=False)]
        except OSError:
            continue
        code = any(n.endswith(".py") and n != "__init__.py" for n in names) or any(
            os.path.isfile(os.path.join(package, n, "__init__.py")) for n in names
        )
        if code:
            return f"the checkout's {top} ({package}) holds part of the package, not {rel}: which {top} runs is unknown"
    return None


def _declared_name(
    program: str | None, roots: list[str], missing_stops: bool = False, pattern: re.Pattern = _CONFIG_NAME
) -> str | Unknown | None:
    """The config name the program's own `@hydra.main(config_name=...)` declares, read from its file in the
    copy that holds the config (hkust-nlp/Laser's vendored verl: `config_name='lengthy_ppo_trainer'`, not
    verl's ppo_trainer); Unknown where it names it by an expression; None where no file or decorator is read
    (the stack's default stands)."""
    from packlint.safe_io import read_regular
    from packlint.values import Unknown

    if not program:
        return None
    rel = program[3:].strip().replace(".", "/") + ".py" if program.startswith("-m ") else program
    if not rel.endswith(".py"):
        return None
    for k, root in enumerate(roots):
        path = rel if os.path.isabs(rel) else os.path.join(root, rel)
        data = read_regular(path, 1 << 20) if os.path.isfile(path) else None
        if (
            data is None
            and missing_stops
            and k == 0
            and program.startswith("-m ")
            and not os.path.exists(path)
            and _holds_python(os.path.dirname(path))
        ):
            # the copy whose config would be read lacks the module (kykim0/chess-r1-dev deleted
            # verl/trainer/main_grpo.py): the launch stops with 'No module named', nothing is composed
            return Unknown(f"{rel} is not in the checkout's copy ({root}): the module the launch runs is missing")
        if data is None:
            continue
        m = _HYDRA_MAIN.search(data.decode("utf-8", "replace"))
        if m is None:
            return None
        n = pattern.search(m.group(1))
        if n is None:
            return None
        if n.group(2) is not None:
            return n.group(2)
        return Unknown(f"{rel} names its Hydra config by an expression ({n.group(3)})")
    return None


def _own_name(
    program: str | None, roots: list[str], module_dir: str, config_dir: str | None, pattern: re.Pattern = _CONFIG_NAME
) -> str | Unknown | None:
    """The config name (or, with _CONFIG_PATH, directory) the program declares, read from the copy whose config
    directory was found."""
    if config_dir is None:
        return None
    tail = os.sep + os.path.join(module_dir, "config") if module_dir else None
    copy = config_dir[: -len(tail)] if tail and config_dir.endswith(tail) else None  # the copy read
    return _declared_name(program, [copy] if copy else roots, missing_stops=copy is not None, pattern=pattern)


def _holds_python(d: str) -> bool:
    """The directory holds Python modules besides `__init__.py` (a copy of the stack's code, not its configs)."""
    try:
        return any(n.endswith(".py") and n != "__init__.py" for n in os.listdir(d))
    except OSError:
        return False


def _tied(record: dict, config_dir: str, tied: list[str], where: tuple[str, str | None, str]) -> bool:
    """Whether the config directory found is one of several copies' equally near the script (or a sibling
    sub-project's only copy); if so the record says which (`candidates`, shown) and that it is unknown."""
    if not any(config_dir.startswith(t + os.sep) for t in tied):
        return False
    dirs_of = _tied_config_dirs(tied, *where)
    if not dirs_of or (len(tied) > 1 and len(dirs_of) < 2):
        return False  # (of copies equally near, the only one that holds the config is the one Hydra can run)
    from packlint.configs import _shown

    shown = [_shown(d) for d in dirs_of]
    record["candidates"] = shown
    if len(shown) == 1:
        record["unknown"] = (
            f"the checkout's only copy of the stack ({shown[0]}) is inside a sub-project of its own, beside the "
            "script's: whether the launch runs it is not known from the tree"
        )
    else:
        record["unknown"] = (
            f"the checkout holds {len(shown)} copies of the stack equally near the script "
            f"({', '.join(shown)}): which one the launch runs is not known from the tree"
        )
    return True


def _tied_config_dirs(tied: list[str], module_dir: str, path_text: str | None, default_dir: str) -> list[str]:
    """The config directory each of the tied vendored copies would give (those that hold one)."""
    out = []
    for t in tied:
        if path_text is not None:
            found = _find_dir(os.path.join(module_dir, path_text), [t]) if module_dir else None
        else:
            default = os.path.join(module_dir, "config") if module_dir.endswith("trainer") else default_dir
            found = os.path.join(t, default) if os.path.isdir(os.path.join(t, default)) else None
        if found is not None:
            out.append(found)
    return out


def compose_keys(config_dir: str, name: str) -> set[str] | None:
    """The keys of `name`.yaml in `config_dir` composed with its defaults (no overrides); None when the
    composition is incomplete."""
    primary = os.path.join(config_dir, f"{name}.yaml")
    if not os.path.isfile(primary):
        return None
    target: dict = {}
    state: dict[str, Any] = {"incomplete": [], "files": [{}], "count": 0}
    _compose(config_dir, name, "", target, state, 0, primary=True)
    if state["incomplete"] or any(f.get("unknown") or f.get("error") for f in state["files"]):
        return None
    return set(target)


def _merge_into(target: dict, settings: dict) -> None:
    for k, v in settings.items():
        # a scalar replacing a subtree (or the other way) removes what it replaces
        for old in [o for o in target if o.startswith(k + ".") or k.startswith(o + ".")]:
            del target[old]
        target[k] = v


def _compose(
    config_dir: str, rel: str, package: str, target: dict, state: dict, depth: int, primary: bool = False
) -> None:
    from packlint.configs import _over_limits, _shown, flatten, read_config_file

    state["count"] += 1
    if depth > MAX_DEPTH or state["count"] > 200:
        state["incomplete"].append("the Hydra defaults nest too deeply")
        return
    path = os.path.join(config_dir, rel + ".yaml")
    if not os.path.isfile(path):
        state["incomplete"].append(f"the config {rel}.yaml is not in {_shown(config_dir)}")
        return
    root, err = read_config_file(path, "yaml", "omegaconf")
    shown = _shown(path)
    if not primary:
        state["files"].append({"role": "defaults", "path": rel + ".yaml", "format": "yaml", "file": shown})
    if err is not None and err.unread:  # (outside the checkout, not a regular file: values unknown)
        state["incomplete"].append(f"{shown}: {err.message}")
        state["files"][-1 if not primary else 0]["unknown"] = err.message
        state["files"][-1 if not primary else 0]["not_read"] = err.message
        return
    if err is not None:
        state["incomplete"].append(f"{shown} could not be read ({err.message})")
        # over packlint's own limits: its values are unknown (PK603); otherwise the loader's error (PK602)
        state["files"][-1 if not primary else 0]["unknown" if _over_limits(err) else "error"] = (
            f"over packlint's limits: {err.message}" if _over_limits(err) else err.message
        )
        return
    from packlint.safe_io import read_head

    head = (read_head(path, 4096) or b"").decode("utf-8", "replace")
    m = _PACKAGE.search(head)
    if m is not None and not primary:
        pkg = m.group(1)
        if pkg == "_global_":
            package = ""
        elif pkg != "_group_":
            package = pkg.replace("_group_", package)
    body = dict(root.value or {})
    defaults = body.pop("defaults", None)
    own: dict = {}
    for k, node in body.items():
        flatten(node, shown, f"{package}.{k}" if package else k, own)
    entries = defaults.value if defaults is not None and isinstance(defaults.value, list) else []
    self_done = False
    group_dir = os.path.dirname(rel)
    for e in entries:
        v = e.value
        if v == "_self_":
            _merge_into(target, own)
            self_done = True
        elif isinstance(v, str):
            # `- name` or `- name@pkg`: a config of this directory, at the package it names
            name, _, pkg = v.partition("@")
            if pkg == "_global_":
                sub = ""
            elif pkg:
                sub = ".".join(p for p in (package, pkg.replace("_global_.", "")) if p)
            else:
                sub = package
            _compose(config_dir, os.path.join(group_dir, name) if group_dir else name, sub, target, state, depth + 1)
        elif isinstance(v, dict) and len(v) == 1:
            _compose_group(config_dir, group_dir, package, v, target, state, depth)
        else:
            state["incomplete"].append(f"a defaults entry of {shown} is not understood")
    if not self_done:
        _merge_into(target, own)


def _compose_group(
    config_dir: str, group_dir: str, package: str, entry: dict, target: dict, state: dict, depth: int
) -> None:
    """A `- group: choice` (or `- optional group@pkg: choice`) defaults entry: the chosen config of the
    group, composed at the package Hydra gives it."""
    ((key, choice_node),) = entry.items()
    choice = choice_node.value
    words = key.split()
    if words and words[0] in ("override",):
        state["incomplete"].append(f"the defaults entry `{key}` (an override) is not followed")
        return
    optional = words[0] == "optional" if words else False
    group_spec = words[-1]
    group, _, pkg = group_spec.partition("@")
    absolute = group.startswith("/")
    group = group.lstrip("/")
    written = group
    if not absolute and group_dir:
        group = os.path.join(group_dir, group)
    if choice is None:
        return
    if not isinstance(choice, str) or "${" in choice:
        state["incomplete"].append(f"the defaults choice {group_spec}: {choice!r} is not followed")
        return
    if pkg in ("_global_",):
        sub_package = ""
    elif pkg:
        sub_package = (package + "." if package and not pkg.startswith("_global_.") else "") + pkg.replace(
            "_global_.", ""
        )
    else:
        rel_pkg = written.replace("/", ".")
        sub_package = rel_pkg if absolute else ".".join(p for p in (package, rel_pkg) if p)
    if optional and not os.path.isfile(os.path.join(config_dir, group, choice + ".yaml")):
        return
    _compose(config_dir, os.path.join(group, choice), sub_package, target, state, depth + 1)
