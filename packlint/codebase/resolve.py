"""Finding the source file a launch's program names.

Scripts name programs by container paths (`/workspace/LLaVA-OneVision-2/aiak_training_llm/train.py`),
by paths relative to a `cd` packlint may not follow (`pretrain_gpt.py`), or as modules (`-m pkg.mod`).
Candidates, first match wins:

1. `--path-map PREFIX=DIR`: a program under PREFIX is looked up under DIR;
2. every `--code-base` root, then the checkout the script lives in (each directory from the script's
   own up to the checkout root: the first with a `.git`, `.hg` or `.svn`, else the nearest project
   root, else the script's own directory; never `/`, home or the temp directory), matching the program
   path's *longest existing suffix* (`a/b/train.py` -> `ROOT/a/b/train.py`, then `ROOT/b/train.py`,
   then `ROOT/train.py`);
3. the launch's own `PYTHONPATH` entries, mapped the same way (for `-m` modules).

Only stats files: cheap enough to run for every launch of every checked script.
"""

from __future__ import annotations

import os

from packlint.caches import memo
from packlint.codebase.model import ProgramResolution
from packlint.codebase.options import CodeOptions

REPO_MARKERS = (".git", ".hg", ".svn")
# Without a VCS marker, the nearest directory holding one of these is the checkout's root (a project's
# packaging files); requirements*.txt is weaker (examples often carry their own), so it counts only when
# no directory up to the boundary has one of these.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


def never_roots() -> frozenset[str]:
    """Directories never searched as a checkout, nor above: `/`, the home directory and the system temp
    directory (a checkout *inside* the temp directory is fine; the temp directory itself is not one)."""
    out = {os.path.abspath(os.sep)}
    for d in (os.path.expanduser("~"), _temp_dir(), "/tmp", "/var/tmp"):
        if d and d != "~":
            out.add(os.path.abspath(d))
            out.add(os.path.realpath(d))
    return frozenset(out)


def _temp_dir() -> str:
    """tempfile.gettempdir(), without importing tempfile (5 ms: shutil, bz2, lzma, random) in the usual
    case, where it would answer /tmp: no TMPDIR/TEMP/TMP and /tmp a writable directory."""
    import sys

    if (
        "tempfile" not in sys.modules  # (once imported, it may have been told another directory)
        and os.name == "posix"
        and not any(os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP"))
        and os.path.isdir("/tmp")
        and os.access("/tmp", os.W_OK | os.X_OK)
    ):
        return "/tmp"
    import tempfile

    return tempfile.gettempdir()


def _has_requirements(d: str) -> bool:
    try:
        with os.scandir(d) as it:
            return any(e.name.startswith("requirements") and e.name.endswith(".txt") for e in it)
    except OSError:
        return False


def checkout_root(start: str) -> tuple[str | None, str]:
    """The root of the checkout `start` lies in, and why: the nearest directory at or above `start` with
    a VCS marker; without one, the nearest with a project marker (pyproject.toml, setup.py, setup.cfg,
    then requirements*.txt); else `start` itself. The climb stops below `/`, the home directory and the
    temp directory; None when `start` is one of them (nothing is searched)."""
    d = os.path.abspath(start)
    hit = _ROOT_MEMO.get(d)
    if hit is not None:
        return hit
    _ROOT_MEMO[d] = found = _checkout_root(d)
    return found


_ROOT_MEMO: dict[str, tuple[str | None, str]] = memo()  # one run: the tree does not change under it


def clear_run_memos() -> None:
    """Forget what one run learnt about the tree (checkout roots, stack files): each `check_paths`
    starts afresh, so a long-lived process (the editor server) sees a tree that changed."""
    import sys

    from packlint.codebase.search_budget import SEARCHES

    SEARCHES.reset()  # one search budget per run (git history, grep: audit R12)
    _ROOT_MEMO.clear()
    reader = sys.modules.get("packlint.codebase.reader")
    if reader is not None:
        reader.PROGRAM_MEMO.clear()
        reader.FILE_MEMO.clear()
    stack_source = sys.modules.get("packlint.conditions.functions.stack_source")
    if stack_source is not None:
        stack_source._LOCATE_MEMO.clear()
    from packlint import caches

    caches.clear_run_memos()  # (the memos made with caches.run_memo)


def _checkout_root(d: str) -> tuple[str | None, str]:
    d0 = d
    stop = never_roots()
    if d in stop:
        return None, f"{d} is never searched as a checkout (the root, home or temp directory)"
    project = weak = None
    while d not in stop:
        if any(os.path.exists(os.path.join(d, m)) for m in REPO_MARKERS):
            return d, "vcs"
        if project is None and any(os.path.isfile(os.path.join(d, m)) for m in PROJECT_MARKERS):
            project = d
        if project is None and weak is None and _has_requirements(d):
            weak = d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if project is not None:
        return project, "project"
    if weak is not None:
        return weak, "requirements"
    return d0, "script-dir"


def repository_root(start: str) -> str | None:
    """The nearest directory at or above `start` holding a VCS marker (below the never-searched
    directories), or None."""
    root, why = checkout_root(start)
    return root if why == "vcs" else None


def script_checkout_dirs(
    script_path: str | None, root_memo: dict[str, tuple[str | None, str]] | None = None
) -> list[str]:
    """The script's directory and its ancestors up to the checkout root (inclusive; see checkout_root).
    Empty when the script's directory is `/`, the home or the temp directory. `root_memo`: directory
    -> (checkout root, why), kept by the caller for one run."""
    return checkout_of(script_path, root_memo)[0]


def checkout_of(
    script_path: str | None, root_memo: dict[str, tuple[str | None, str]] | None = None
) -> tuple[list[str], str]:
    """(script_checkout_dirs, why the climb stopped where it did: see checkout_root)."""
    if not script_path or script_path.startswith("<"):
        start = os.getcwd()
    else:
        start = os.path.dirname(os.path.abspath(script_path))
    if root_memo is None:
        root, why = checkout_root(start)
    elif start in root_memo:
        root, why = root_memo[start]
    else:
        root, why = root_memo[start] = checkout_root(start)
    if root is None:
        return [], why
    dirs = []
    d = start
    while True:
        dirs.append(d)
        if d == root:
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return dirs, why


def apply_path_maps(path: str, maps: list[tuple[str, str]]) -> str | None:
    """`path` with the longest matching container prefix replaced by its local directory."""
    best = None
    for prefix, local in maps:
        p = prefix.rstrip("/") or "/"
        if (path == p or path.startswith(p + "/") or p == "/") and (best is None or len(p) > len(best[0])):
            best = (p, local)
    if best is None:
        return None
    rest = path[len(best[0]) :].lstrip("/")
    return os.path.normpath(os.path.join(best[1], rest)) if rest else os.path.normpath(best[1])


def _suffixes(parts: list[str]) -> list[str]:
    return ["/".join(parts[i:]) for i in range(len(parts))]


def _module_file(base: str, module: str) -> str | None:
    rel = module.replace(".", "/")
    if os.path.isfile(os.path.join(base, rel, "__init__.py")):  # a package runs its __main__ (or fails)
        main = os.path.join(base, rel, "__main__.py")
        return main if os.path.isfile(main) else None
    f = os.path.join(base, rel + ".py")
    return f if os.path.isfile(f) else None


def map_dir(
    entry: str, options: CodeOptions, roots: list[str], cwd_hint: str | None, script_dir: str | None = None
) -> str | None:
    """A PYTHONPATH entry (maybe a container path) as a local directory, or None. A relative entry that climbs
    (`../../../`, CosyVoice's path.sh, meant from the recipe's directory) is taken from the script's directory
    and only inside the checkout: never a directory above it (packlint would search the machine's files)."""
    mapped = apply_path_maps(entry, options.path_maps)
    if mapped is not None and os.path.isdir(mapped):
        return os.path.abspath(mapped)
    if os.path.isabs(entry) and os.path.isdir(entry) and not entry.startswith("/workspace"):
        return entry
    parts = [p for p in entry.strip("/").split("/") if p and p != "."]
    if not parts:
        return cwd_hint
    if ".." in parts:
        if os.path.isabs(entry) or script_dir is None:
            return None
        cand = os.path.normpath(os.path.join(script_dir, entry))
        inside = any(cand == r or cand.startswith(r.rstrip(os.sep) + os.sep) for r in map(os.path.abspath, roots))
        return cand if inside and os.path.isdir(cand) else None
    for root in roots:
        for suf in _suffixes(parts):
            cand = os.path.join(root, suf)
            if os.path.isdir(cand):
                return os.path.abspath(cand)
    return None


def resolve(
    program: str | None,
    script_path: str | None,
    options: CodeOptions,
    pythonpath: list[str],
    workdir: str | None = None,
) -> ProgramResolution:
    """The source file of a launch's program (`-m pkg.mod` or a path), and how it was found."""
    if not options.enabled:
        return ProgramResolution(program, None, "disabled", "code-base reading is off (--no-code-base)")
    if not program:
        return ProgramResolution(program, None, "no-program", "the launch runs no Python program packlint can see")
    search = _Search(program, script_path, options, pythonpath, workdir)
    if program.startswith("-m ") or program.startswith("-m"):
        return search.module(program[2:].strip())
    if "$" in program or not program.endswith(".py"):
        if not program.endswith(".py"):
            return search.unresolved("unknown-program", f"{program!r} is not a .py file packlint can read")
        return search.unresolved("unknown-program", "the program path is not known")
    return search.path()


class _Search:
    """Where one program is looked for (the code bases, the launch's PYTHONPATH mapped to this machine,
    the script's checkout) and how a find or a miss is reported."""

    def __init__(
        self,
        program: str,
        script_path: str | None,
        options: CodeOptions,
        pythonpath: list[str],
        workdir: str | None = None,
    ) -> None:
        self.program, self.options, self.pythonpath = program, options, pythonpath
        # the folder a `cd` before the launch entered (a folder of the checkout): `python -m pkg.mod` imports
        # from it (sys.path[0]) and a relative program path is taken from it (Reward-Calibration's `cd
        # OpenRLHF` then `deepspeed --module openrlhf.cli.train_dpo` runs the checkout's vendored copy)
        self.workdir = workdir
        self.script_dir = os.path.dirname(os.path.abspath(script_path)) if script_path else None
        self.checkout, self.bound = checkout_of(script_path, getattr(options, "root_memo", None))
        self.explicit = [os.path.abspath(d) for d in options.code_bases]
        self.top = self.checkout[-1] if self.checkout else None
        self.mapped_pp = self.mapped_pythonpath(options)
        self.search_roots = list(dict.fromkeys(self.explicit + ([self.top] if self.top else [])))

    def mapped_pythonpath(self, options: CodeOptions) -> list[str]:
        pp = []
        for entry in self.pythonpath:
            roots = list(dict.fromkeys(self.explicit + ([self.top] if self.top else [])))
            d = map_dir(entry, options, roots, self.top, self.script_dir)
            if d is not None:
                pp.append(d)
        return list(dict.fromkeys(pp))

    def isfile(self, path: str) -> bool:
        memo = getattr(self.options, "file_memo", None)
        if memo is None:
            return os.path.isfile(path)
        found = memo.get(path)
        if found is None:
            found = memo[path] = os.path.isfile(path)
        return found

    def found(self, file: str, how: str, detail: str, root: str | None, suffix: str | None = None) -> ProgramResolution:
        program, options = self.program, self.options
        pp = self.mapped_pp
        if suffix and program.endswith("/" + suffix) and os.path.isabs(program) and root:
            # `/workspace/P/x/train.py` found as ROOT/x/train.py: /workspace/P is ROOT for PYTHONPATH too
            implied = CodeOptions(
                list(options.code_bases), [(program[: -len(suffix) - 1], root)] + list(options.path_maps)
            )
            pp = self.mapped_pythonpath(implied)
        return ProgramResolution(program, os.path.abspath(file), how, detail, root, self.search_roots, pp)

    def unresolved(self, how: str, detail: str) -> ProgramResolution:
        return ProgramResolution(self.program, None, how, detail, None, self.search_roots, self.mapped_pp)

    def module(self, module: str) -> ProgramResolution:
        """`-m pkg.mod`: under the code bases, then the PYTHONPATH, then the script's checkout."""
        if not module or "$" in module:
            return self.unresolved("unknown-program", "the module name is not known")
        for base, how in (
            [(d, "code-base") for d in self.explicit]
            + [(d, "workdir") for d in ([self.workdir] if self.workdir else [])]
            + [(d, "pythonpath") for d in self.mapped_pp]
            + [(d, "script-checkout") for d in self.checkout]
        ):
            f = _module_file(base, module)
            if f is not None:
                return self.found(f, how, f"module {module} found under {base}", base)
        sub = self._subproject_module(module)
        if sub is not None:
            return sub
        roots = ", ".join(self.explicit + self.mapped_pp + self.checkout[-1:]) or "any root"
        return self.unresolved("not-found", f"module {module} not found under {roots}{self.bound_note()}")

    def _subproject_module(self, module: str) -> ProgramResolution | None:
        """`-m pkg.mod` the checkout holds in a sub-project (`<root>/verl/verl/trainer/main_ppo.py`, installed
        with `pip install -e verl`); several sub-projects holding it leave the program unknown (which one is
        installed is the machine's)."""
        from packlint.codebase.subprojects import subprojects_holding

        if self.top is None:
            return None
        hits = []
        for d in subprojects_holding(self.top, module.split(".", 1)[0]):
            f = _module_file(d, module)
            if f is not None:
                hits.append((d, f))
        if len(hits) == 1:
            d, f = hits[0]
            return self.found(f, "sub-project", f"module {module} found in the checkout's sub-project {d}", d)
        if hits:
            where = ", ".join(d for d, _ in hits)
            return self.unresolved(
                "unknown-program", f"module {module} is in several sub-projects of the checkout ({where})"
            )
        return None

    def path(self) -> ProgramResolution:
        """A `*.py` path: --path-map, then the longest existing suffix under a root, then the path as it
        is, then its file name in a PYTHONPATH entry."""
        program, options = self.program, self.options
        mapped = apply_path_maps(program, options.path_maps)
        if mapped is not None and os.path.isfile(mapped):
            return self.found(
                mapped, "path-map", f"{program} mapped by --path-map to {mapped}", os.path.dirname(mapped)
            )
        if self.workdir and not os.path.isabs(program):
            cand = os.path.normpath(os.path.join(self.workdir, program))
            if self.isfile(cand):
                return self.found(
                    cand,
                    "workdir",
                    f"{program} taken from {self.workdir} (the `cd` before the launch)",
                    os.path.dirname(cand),
                )
        parts = [p for p in program.split("/") if p and p != "."]
        if ".." in parts:
            parts = parts[len(parts) - 1 - parts[::-1].index("..") :][1:]
        tried = []
        # a relative path keeps its directory: `tools/train.py` (mmseg's, run from a checkout of its own) is
        # never the checkout's top-level `train.py`; an absolute (container) path may lose its leading parts
        keep_dir = not os.path.isabs(program) and len(parts) > 1
        # the longest suffix wins over a nearer directory: `/workspace/P/pkg/train.py` is `ROOT/pkg/train.py`
        # even when the script's own folder has some other train.py
        own = self.checkout if ".." in program.split("/") else self._own_project()  # (`../x.py` climbs on purpose)
        for block, how in ((self.explicit, "code-base"), (own, "script-checkout")):
            for suf in _suffixes(parts)[: -1 if keep_dir else None]:
                for root in block:
                    cand = os.path.join(root, suf)
                    if self.isfile(cand):
                        what = "the script's checkout" if how == "script-checkout" else "--code-base"
                        return self.found(cand, how, f"longest existing suffix {suf} under {root} ({what})", root, suf)
            tried.extend(block)
        if os.path.isabs(program) and os.path.isfile(program):
            return self.found(program, "absolute", f"{program} exists on this machine", os.path.dirname(program))
        for d in self.mapped_pp:
            cand = os.path.join(d, parts[-1])
            if os.path.isfile(cand):
                return self.found(cand, "pythonpath", f"{parts[-1]} found in PYTHONPATH entry {d}", d)
        where = ", ".join(tried) if tried else "nowhere"
        hint = "" if options.code_bases else " (give --code-base DIR, or --path-map PREFIX=DIR for container paths)"
        return self.unresolved("not-found", f"no suffix of {program} exists under {where}{self.bound_note()}{hint}")

    def _own_project(self) -> list[str]:
        """The script's directories up to its own sub-project's root (a directory with setup.py, pyproject.toml or
        setup.cfg below the checkout's root) or the checkout's root: a program of the same name in an enclosing
        project is another project's (huggingface/distil-whisper: training/flax/*.sh run `python
        run_pseudo_labelling.py` of the flax project, not training/run_pseudo_labelling.py; 29 false PK201)."""
        dirs = list(self.checkout)
        for i, d in enumerate(dirs[:-1]):
            if any(os.path.isfile(os.path.join(d, m)) for m in ("setup.py", "pyproject.toml", "setup.cfg")):
                return dirs[: i + 1]
        return dirs

    def bound_note(self) -> str:
        """Why the script's checkout ends where it does, when no VCS marker decided it."""
        top = self.checkout[-1] if self.checkout else None
        if self.bound == "project":
            return f"; no VCS marker, so the checkout stops at its project root {top}"
        if self.bound == "requirements":
            return f"; no VCS marker, so the checkout stops at {top} (requirements*.txt)"
        if self.bound == "script-dir":
            return f"; no VCS marker or project file, so only the script's directory {top} is searched"
        if self.bound != "vcs":
            return f"; {self.bound}"
        return ""
