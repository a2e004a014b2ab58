"""The code base a launch runs: find the program's source, read it with `ast`, hand facts to the rules.

The facade the rest of packlint uses (everything else in this package is internal):

- `resolve_program(program, script_path, options, pythonpath=())` -> ProgramResolution
- `facts_for_launch(launch, script_path, options, variant=None)` -> CodeFacts | None
- `facts_for_program(program_file, roots, pythonpath=(), options=None)` -> CodeFacts
- `schema_for_program(root, program_file)` -> FlagSchema | None
- `CodeSession(script_path, options)`: per checked script, memoised; `session.facts(launch, variant)`
  is what the rule engine calls (EvalContext.code_facts()).

Reading never imports or executes the code it reads. Importing this package is cheap (no `ast` until
a program is read), and nothing here runs unless a rule asks or `inspect` shows the resolution.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from packlint.codebase.model import CodeFacts, CodeOptions, FlagSchema, ProgramResolution

_MODEL_NAMES = ("CodeFacts", "CodeOptions", "EnvRead", "FlagSchema", "FlagSpec", "ProgramResolution", "SkippedFile")


def __getattr__(name: str):
    """The model's records, re-exported lazily: a check whose rules never ask for code does not pay for
    building them."""
    if name == "CodeOptions":
        from packlint.codebase.options import CodeOptions

        return CodeOptions
    if name in _MODEL_NAMES:
        from packlint.codebase import model

        return getattr(model, name)
    raise AttributeError(name)


def _program_of(launch: Mapping[str, Any], variant: Mapping[str, Any] | None) -> str | None:
    if variant is not None and variant.get("program") is not None:
        return variant.get("program")
    return launch.get("program")


def launch_pythonpath(launch: Mapping[str, Any], variant: Mapping[str, Any] | None = None) -> list[str]:
    """The PYTHONPATH entries the launch's environment sets (known values only), in order."""
    env = (variant or launch).get("env") or launch.get("env") or {}
    entry = env.get("PYTHONPATH")
    if not isinstance(entry, dict):
        return []
    value = entry.get("value")
    if not isinstance(value, str):
        return []
    return [p for p in value.split(":") if p]


def resolve_program(
    program: str | None,
    script_path: str | None,
    options: CodeOptions | None = None,
    pythonpath: list[str] | tuple[str, ...] = (),
    workdir: str | None = None,
) -> ProgramResolution:
    """Match a launch's program (`train.py`, `/workspace/P/x/train.py`, `-m pkg.mod`) to a source file:
    the --code-base roots, then --path-map, then the folder a `cd` before the launch entered (`workdir`),
    then the checkout the script lives in (longest existing suffix), then the launch's PYTHONPATH. Never
    raises; says why not when nothing matched."""
    from packlint.codebase.options import CodeOptions
    from packlint.codebase.resolve import resolve

    return resolve(program, script_path, options or CodeOptions(), list(pythonpath), workdir)


def launch_workdir(launch: Mapping[str, Any]) -> str | None:
    """The folder of the checkout a launch runs in, from the nearest `cd`/`pushd` before its location in the
    launch model; None when there is none or it cannot be told. An absolute path of another machine mapped to
    the checkout's folder by its tail is a premise: a program found there (`how` 'workdir') names it in the
    evidence of what rests on it (conditions/tree.py `EvalContext.code_facts`)."""
    from packlint.codebase.workdir import find_workdir, launch_variables

    return find_workdir(launch.get("file"), launch.get("line"), launch.get("column"), launch_variables(launch))[0]


def facts_for_program(
    program_file: str,
    roots: list[str] | tuple[str, ...] = (),
    pythonpath: list[str] | tuple[str, ...] = (),
    options: CodeOptions | None = None,
    resolution: ProgramResolution | None = None,
) -> CodeFacts:
    """Read one program file and its import closure (cached by content; `options.use_cache`)."""
    from packlint.codebase.options import CodeOptions
    from packlint.codebase.reader import read_program

    return read_program(program_file, list(roots), list(pythonpath), options or CodeOptions(), resolution)


def schema_for_program(root: str, program_file: str, options: CodeOptions | None = None) -> FlagSchema | None:
    """The flag schema of `program_file` with `root` on the module search path (None: no parser found)."""
    return facts_for_program(program_file, [root], (), options).schema


def facts_for_launch(
    launch: dict, script_path: str | None, options: CodeOptions | None = None, variant: dict | None = None
) -> CodeFacts | None:
    """The facts about the code one launch (a launch dict of the launch model, or one of its variants)
    runs. None when code reading is off or the launch runs no Python program; a CodeFacts whose
    `resolution.found` is False when the program's source was not found (the resolution says why)."""
    return CodeSession(script_path, options).facts(launch, variant)


class CodeSession:
    """The code reading of one checked script: resolves and reads each distinct (program, PYTHONPATH)
    once. Its `facts` method is the callable the rule engine hands to conditions."""

    def __init__(self, script_path: str | None, options: CodeOptions | None = None) -> None:
        if options is None:
            from packlint.codebase.options import CodeOptions

            options = CodeOptions()
        self.script_path = script_path
        self.options = options
        self._memo: dict[tuple, CodeFacts | None] = {}
        self._workdirs: dict[tuple, str | None] = {}

    def resolution(
        self, launch: Mapping[str, Any], variant: Mapping[str, Any] | None = None
    ) -> ProgramResolution | None:
        program = _program_of(launch, variant)
        if not self.options.enabled:
            return None
        pp = launch_pythonpath(launch, variant)
        return resolve_program(program, self.script_path, self.options, pp, self._workdir(launch))

    def _workdir(self, launch: Mapping[str, Any]) -> str | None:
        key = (launch.get("file"), launch.get("line"), launch.get("column"))
        if key not in self._workdirs:
            self._workdirs[key] = launch_workdir(launch)
        return self._workdirs[key]

    def facts(self, launch: Mapping[str, Any], variant: Mapping[str, Any] | None = None) -> CodeFacts | None:
        if not self.options.enabled:
            return None
        program = _program_of(launch, variant)
        pythonpath = launch_pythonpath(launch, variant)
        workdir = self._workdir(launch)
        key = (program, tuple(pythonpath), workdir)
        if key in self._memo:
            return self._memo[key]
        from packlint.codebase.model import CodeFacts, ProgramResolution

        try:
            res = resolve_program(program, self.script_path, self.options, pythonpath, workdir)
            if res.how == "no-program":
                facts = None
            elif res.file is None:  # (not res.found)
                facts = CodeFacts(res)
            else:
                pp = list(res.pythonpath)
                if (program or "").startswith("-m") and res.root and res.root not in pp:
                    pp.insert(0, res.root)  # `python -m pkg.mod` from the directory holding pkg: it is sys.path[0]
                facts = facts_for_program(res.file, res.roots, pp, self.options, res)
        except (Exception, RecursionError) as exc:  # a reader bug must not cost the user the whole check
            import os

            if os.environ.get("PACKLINT_DEBUG"):
                raise
            facts = CodeFacts(
                ProgramResolution(
                    program,
                    None,
                    "read-error",
                    f"packlint could not read the code ({type(exc).__name__}: {exc}); this is a bug in packlint",
                )
            )
        self._memo[key] = facts
        return facts
