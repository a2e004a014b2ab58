"""The rule table: `rules/*.toml` (built in) plus user rule files, validated with pydantic, compiled to
condition objects (packlint.conditions) and cached by content hash, so a warm start neither parses
TOML nor imports pydantic.

A table file holds:

    [variables]            # named lists (for `for_each`) and constants
    gates = ["OFFLINE_PACKING_BMR", "OFFLINE_PACKED_DATA"]

    [predicates]           # named shared expressions, with or without parameters
    gate2_open = "gate_on('OFFLINE_PACKED_DATA') or has_flag('--packing-pretrain-data')"
    gate_on = { params = ["var"], expr = "int(env(var), 0) == 1" }

    [[rule]]               # see docs/rules.md for every field
    code = "PK001"  ...

Names in [variables] and [predicates] are shared across all loaded files (built-in first).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packlint import __version__
from packlint.conditions import (
    BOOL,
    STR,
    ConditionError,
    Expr,
    PredicateBody,
    Scope,
    Setting,
    Template,
    check,
    compile_condition,
    compile_template,
    parse,
)
from packlint.errors import PacklintError
from packlint.records import factory, record

if TYPE_CHECKING:
    from collections.abc import Sequence

CACHE_FORMAT = 5  # 4: JSON data (packlint.rule_cache), no longer a pickle; 5: lazy fields

LOCATION_KINDS = {
    # kind: (takes a name, allowed parts)
    "launch": (False, ()),
    "diagnostic": (False, ("", "related")),  # related: the diagnostic's first related location
    "env": (True, ("", "value")),
    "var": (True, ("", "value")),
    "exported_after": (True, ("",)),
    # problem: the occurrence flag_problem judged (PK202: a bare `--x` before a later `--x v`)
    "flag": (True, ("", "value", "first", "first_value", "problem")),
    "launcher_flag": (True, ("", "value")),
    # issue 20: where a configuration key's merged value was set (a YAML/JSON line or the override
    # word); `setting:deepspeed:train_batch_size` for a section. `config_file`: the argument naming
    # a config file that was not found or could not be read (its first such file).
    "setting": (True, ("", "key")),  # `setting:NAME:key`: the key's own word where a flag gives it
    "config_file": (False, ()),
}

FOR_EACH_BUILTIN = {"flags", "env", "diagnostics", "startup_checks", "stack_keys"}

# `since = "0.2.0"`: the packlint release that first ships the rule (docs/rules.md, "Releasing").
SINCE_PATTERN = r"^\d+\.\d+\.\d+$"


def version_tuple(version: str) -> tuple[int, ...]:
    """ "0.10.1" -> (0, 10, 1), for comparing release numbers."""
    return tuple(int(x) for x in version.split("."))


def is_released(rule: Rule, version: str = __version__) -> bool:
    """Whether packlint `version` ships the rule: its `since` is at most `version`. A rule without
    `since` (a user rule file's) counts as released. An unreleased rule is checked like any other; it
    only stays out of the committed reference and the CHANGELOG until the release that ships it."""
    return rule.since is None or version_tuple(rule.since) <= version_tuple(version)


# `versions = "core>=0.8"`, `"core<0.16"`, `"core>=0.12,<0.16"`: Megatron core release numbers;
# `"trl>=0.19,<0.21"`, `"llamafactory>=0.9.5"`: the version of a training stack (issue 20; stack ids
# as packlint.configs.STACKS). Operators: >= > <= < == !=.
_VERSION_STACKS = (
    "core|llamafactory|trl|axolotl|swift|megatron-swift|hf-trainer|deepspeed|verl|openrlhf|megatron-bridge|"
    "nemo-rl|internvl|xtuner|torchtitan|megatron-lm"
)
_VOP = r"(>=|<=|==|!=|<|>)\d+(\.\d+)*"
VERSIONS_PATTERN = rf"^({_VERSION_STACKS}){_VOP}(,{_VOP})*$"


def parse_versions(versions: str) -> tuple[str, list[tuple[str, tuple[int, ...]]]]:
    """`"trl>=0.19,<0.21"` -> ("trl", [(">=", (0, 19)), ("<", (0, 21))])."""
    m = re.match(r"^([a-z][a-z-]*)", versions)
    stack = m.group(1) if m else ""
    out = []
    for part in versions[len(stack) :].split(","):
        op_m = re.match(r"^(>=|<=|==|!=|<|>)(.*)$", part.strip())
        if op_m is None:
            continue
        out.append((op_m.group(1), tuple(int(x) for x in op_m.group(2).split("."))))
    return stack, out


def version_in_range(constraints: list[tuple[str, tuple[int, ...]]], version: str) -> bool | None:
    """Whether `version` ("0.19.1", "core_v0.12.0", "0.9.5.dev0") satisfies every constraint, comparing
    as many release components as the constraint writes; None when the version has no number."""
    m = re.search(r"(?<!\d)(\d{1,9}(?:\.\d{1,9})*)(?![\d])", version)  # bounded: no int() of 5,000 digits
    if m is None:
        return None
    have_all = tuple(int(x) for x in m.group(1).split("."))
    for op, want in constraints:
        have = (have_all + (0,) * len(want))[: len(want)]
        ok = {
            ">=": have >= want,
            ">": have > want,
            "<=": have <= want,
            "<": have < want,
            "==": have == want,
            "!=": have != want,
        }[op]
        if not ok:
            return False
    return True


def version_applies(versions: str | None, version: str | None) -> bool:
    """Whether a rule tagged `versions` applies to a launch whose code is at `version` ("0.15.2",
    "core_v0.12.0"). Without a known version every rule applies (the constraint may hold there)."""
    if not versions or not version:
        return True
    _stack, constraints = parse_versions(versions)
    if re.search(r"(\d{1,9})\.(\d{1,9})", version) is None:
        return True
    return version_in_range(constraints, version) is not False


# ---------------------------------------------------------------------------------------------- compiled


# The compiled records below are @record classes (packlint.records): no dataclass creation at start-up;
# they are rebuilt from the table cache (JSON data, packlint.rule_cache) on every run.


@record
class LocationSpec:
    """Where to report: kind (launch, diagnostic, env, var, exported_after, flag, launcher_flag), the
    name (a template), the part ('' | value | first | first_value | problem) and the source text."""

    kind: str
    name: Template | None
    part: str
    text: str


@record
class Override:
    """A severity/message/help change when `when` also holds (first match wins)."""

    when: Expr
    severity: str | None
    message: Template | None
    help: Template | None

    _cache_values = {"severity": (None, "error", "warning", "info")}


@record
class Example:
    """A rule's documented bad/good script, run by the test suite."""

    kind: str
    script: str
    env: dict[str, str]
    args: list[str]
    title: str | None
    code: dict[str, str]


@record
class FixSpec:
    """A rule's fix as data (docs/fixes.md): an edit on the span `at`..`to` (location specs; `to`
    defaults to `at`), `text` (a template), `applicability` (safe | unsafe), `title` (a template),
    `when` (a condition: offer the fix only then, or None), `expect` (a template the span's text must
    start with, or None), `refuse_if_read` (delete: no fix when the script reads the variable)."""

    kind: str
    at: LocationSpec | None
    to: LocationSpec | None
    text: Template | None
    applicability: str
    title: Template
    when: Expr | None
    expect: Template | None
    refuse_if_read: bool
    key: Template | None = None  # set_key: the dotted key (config-file kinds)
    value: Template | None = None  # set_key / replace_value: the value in YAML flow syntax


@record
class Rule:
    """A compiled rule. scope: launch | script; for_each: a [variables] list name, or flags / env /
    diagnostics; undecided: info | ignore; exclusive: when it fires, no launch rule runs on the script;
    fix: a FixSpec or None."""

    code: str
    name: str
    severity: str
    summary: str
    message: Template
    help: Template | None
    when: Expr
    when_text: str
    scope: str
    for_each: str | None
    for_each_items: Any
    report_at: LocationSpec
    related: list[tuple[LocationSpec, Template]]
    undecided: str
    exclusive: bool
    overrides: list[Override]
    explanation: str
    references: list[str]
    examples: list[Example]
    file: str
    builtin: bool
    fix: FixSpec | None
    versions: str | None
    since: str | None = None  # the packlint release that first ships the rule (required for built-ins)

    # the values a cached table may hold in these fields (packlint.rule_cache._type_checks)
    _cache_values = {
        "severity": ("error", "warning", "info"),
        "scope": ("launch", "script"),
        "undecided": ("info", "ignore"),
    }

    # kept as JSON text in the table cache and decoded on first use (packlint.rule_cache): a check
    # reads them only for a rule that fires
    _cache_lazy = (
        "summary",
        "message",
        "help",
        "when_text",
        "report_at",
        "related",
        "overrides",
        "explanation",
        "references",
        "examples",
        "fix",
    )

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:  # only for a field not decoded yet
            pending = self.__dict__.get("_cache_pending")
            if pending is None:
                raise AttributeError(name)
            return pending.get(self, name)


@record
class RuleTable:
    rules: list[Rule]
    variables: dict[str, Any] = factory(dict)
    predicates: dict[str, str] = factory(dict)  # name -> source text, for docs
    files: list[str] = factory(list)

    def by_code(self, code: str) -> Rule | None:
        code = code.upper()
        for r in self.rules:
            if r.code == code or r.name == code.lower():
                return r
        return None


# ---------------------------------------------------------------------------------------------- loading


def builtin_rule_files() -> list[Path]:
    here = Path(__file__).resolve().parent
    for d in (here / "_rules", here.parent / "rules"):
        if d.is_dir():
            files = sorted(p for p in d.glob("*.toml") if p.is_file())
            if files:
                return files
    raise PacklintError("the built-in rule table (rules/*.toml) is missing from the installation")


def load_table(extra_files: Sequence[str | Path] = (), *, builtin: bool = True, use_cache: bool = True) -> RuleTable:
    """Load, validate and compile the built-in rule files plus `extra_files` (raises PacklintError)."""
    from packlint.safe_io import CONFIG_LIMIT, read_bounded

    files: list[tuple[Path, bool]] = [(p, True) for p in builtin_rule_files()] if builtin else []
    files += [(Path(p), False) for p in extra_files]
    blobs: list[tuple[str, bytes, bool]] = []
    for path, is_builtin in files:
        blobs.append((str(path), read_bounded(path, CONFIG_LIMIT, "rule file"), is_builtin))
    key = _cache_key(blobs)
    cache_file = _cache_path(key) if use_cache and not _CACHE_OFF else None
    if cache_file is not None:
        table = _read_cache(cache_file, blobs)
        if table is not None:
            return table
    if use_cache and builtin and not extra_files:  # (the table the release compiled: packlint.rule_shipped)
        from packlint.rule_shipped import shipped_table

        table = shipped_table(blobs, _Recompiled(blobs))
        if table is not None:
            return table
    table = compile_table(blobs)
    if cache_file is not None:
        _write_cache(cache_file, table)
    return table


_CACHE_OFF = False


def disable_cache(off: bool = True) -> None:
    """`--no-cache`: no cache (the rule table's, the stacks table's, the code-base facts') is read or
    written in this process (nor in its workers); off=False turns them back on."""
    global _CACHE_OFF
    _CACHE_OFF = off
    from packlint.caches import disable

    disable(off)


def _cache_key(blobs) -> str:
    try:  # CPython's own BLAKE2 module: `hashlib` would load OpenSSL first, 3 ms of every cold start
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - other Pythons
        from hashlib import blake2b

    h = blake2b(f"{CACHE_FORMAT}:{__version__}:{sys.version_info[:2]}".encode())
    for name, data, is_builtin in blobs:
        h.update(f"\0{name}\0{is_builtin}\0{len(data)}\0".encode())
        h.update(data)
    # the compiled objects' classes live in these modules, and the schema's defaults flow into them:
    # a changed module invalidates the cache
    for mod in compiler_modules():
        try:
            st = os.stat(mod)
            h.update(f"\0{st.st_mtime_ns}:{st.st_size}".encode())
        except OSError:
            pass
    return h.hexdigest()[:32]


def compiler_modules() -> list[str]:
    """The modules that compile the rule files and hold the compiled table's classes (the schema's defaults flow into
    them; matches() patterns are cached as LazyRegex): a table compiled by other ones is not this code's."""
    here = Path(__file__).resolve().parent
    return [
        str(here / name) for name in ("rule_table.py", "rule_schema.py", "regex.py", "rule_cache.py")
    ] + _module_files(here / "conditions")


def _module_files(package: str | Path) -> list[str]:
    """Every module of a package, its sub-packages included, in a stable order (os.scandir: a tenth
    of Path.rglob's cost, paid on every run)."""
    files: list[str] = []
    try:
        entries = list(os.scandir(package))
    except OSError:
        return files
    for entry in entries:
        if entry.name.endswith(".py"):
            files.append(entry.path)
        elif entry.name != "__pycache__" and entry.is_dir():
            files += _module_files(entry.path)
    return sorted(files)


def _cache_dir() -> Path | None:
    from packlint.caches import root

    return root()


def _cache_path(key: str) -> Path | None:
    d = _cache_dir()
    return None if d is None else d / f"rules-{key}.json"


def _read_cache(path: Path, blobs: list[tuple[str, bytes, bool]] | None = None) -> RuleTable | None:
    """The cached table, or None (missing, not a regular file owned by this user, or of another shape:
    docs/security.md). The file is JSON data (packlint.rule_cache); nothing in it can run code.
    A rule's lazy field (its messages and documentation, decoded on first use) that turns out
    malformed is taken from a fresh compile of `blobs` instead."""
    from packlint.caches import LIMITS
    from packlint.safe_io import read_cache_file

    data = read_cache_file(path, LIMITS["rules"])
    if data is None:
        return None
    from packlint.rule_cache import CacheFormatError, loads

    try:
        table = loads(data, None if blobs is None else _Recompiled(blobs))
    except CacheFormatError:
        return None
    return table if isinstance(table, RuleTable) else None


class _Recompiled:
    """A lazy field's value from the rule files themselves (compiled once, on the first damaged field)."""

    def __init__(self, blobs: list[tuple[str, bytes, bool]]) -> None:
        self.blobs = blobs
        self.table: RuleTable | None = None

    def __call__(self, obj: Any, name: str) -> Any:
        if self.table is None:
            self.table = compile_table(self.blobs)
        rule = next((r for r in self.table.rules if r.code == getattr(obj, "code", None)), None)
        if rule is None:  # pragma: no cover - the key hashes the rule files: the codes are the same
            raise PacklintError("the rule-table cache does not match the rule files; run with --no-cache")
        return getattr(rule, name)


def _write_cache(path: Path, table: RuleTable) -> None:
    from packlint.caches import make_dirs, wrote_entry
    from packlint.errors import PacklintError
    from packlint.rule_cache import CacheFormatError, dumps
    from packlint.safe_io import atomic_write

    try:
        data = dumps(table).encode("utf-8")
        make_dirs(path.parent)
        atomic_write(path, data, what="rule-table cache", replace_any=True)
        wrote_entry()
    except (OSError, PacklintError, CacheFormatError, RecursionError):
        pass  # an unwritable cache is no cache


# ---------------------------------------------------------------------------------------------- errors


def _pydantic_one_line(exc, data: dict) -> str:
    err = exc.errors()[0]
    loc = list(err.get("loc", ()))
    where = []
    if len(loc) >= 2 and loc[0] == "rule" and isinstance(loc[1], int):
        try:
            code = data["rule"][loc[1]].get("code")
        except Exception:
            code = None
        where.append(f"rule {code}" if isinstance(code, str) and code else f"rule #{loc[1] + 1}")
        loc = loc[2:]
    if loc:
        where.append(".".join(str(x) for x in loc))
    msg = err.get("msg", "invalid")
    if err.get("type") == "extra_forbidden":
        msg = "unknown field"
    return (": ".join(where) + ": " if where else "") + msg


# ---------------------------------------------------------------------------------------------- compile


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def compile_table(blobs: list[tuple[str, bytes, bool]]) -> RuleTable:
    """Parse, validate and compile rule files: the shared declarations first ([defaults], [variables],
    [predicates], type-checked in dependency order), then every rule against them."""
    from packlint.rule_schema import PredicateSpec, TableSpec

    specs = _load_specs(blobs, TableSpec)
    scope = Scope()
    variables: dict[str, Any] = {}
    pred_sources: dict[str, str] = {}
    pending: list[_PendingPredicate] = []
    for name, text, spec, _ in specs:
        _declare(name, text, spec, PredicateSpec, scope, variables, pred_sources, pending)
    _check_predicates(pending, scope)

    rules: list[Rule] = []
    seen: dict[str, str] = {}
    names: dict[str, str] = {}
    for fname, ftext, spec, is_builtin in specs:
        for r in spec.rule:
            if r.code in seen:
                raise PacklintError(f"rule {r.code}: code already used in {seen[r.code]}", path=fname)
            if r.name in names:
                raise PacklintError(f"rule {r.code}: name {r.name!r} already used by {names[r.name]}", path=fname)
            if is_builtin and r.since is None:
                raise PacklintError(
                    f"rule {r.code}: a built-in rule needs `since` (the packlint release that first ships it)",
                    path=fname,
                )
            seen[r.code] = fname
            names[r.name] = r.code
            rules.append(_compile_rule(r, fname, ftext, is_builtin, scope, variables))
    rules.sort(key=lambda r: r.code)
    return RuleTable(rules=rules, variables=variables, predicates=pred_sources, files=[b[0] for b in blobs])


def _load_specs(blobs: list[tuple[str, bytes, bool]], TableSpec) -> list[tuple[str, str, Any, bool]]:
    """(file name, text, validated TableSpec, is built-in) of every blob; one-line errors naming the file."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    from pydantic import ValidationError

    from packlint import toml_bounds

    specs = []
    for name, data, is_builtin in blobs:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise PacklintError("rule file is not UTF-8", path=name) from None
        try:  # a user's rule file within the bounds of toml_bounds (R07); the built-in ones are packlint's own
            raw = tomllib.loads(text) if is_builtin else toml_bounds.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PacklintError(f"invalid TOML: {exc}", path=name) from None
        except toml_bounds.TomlLimitError as exc:
            raise PacklintError(f"TOML over packlint's limits: {exc}", path=name, line=exc.line or None) from None
        try:
            spec = TableSpec.model_validate(raw)
        except ValidationError as exc:
            raise PacklintError(_pydantic_one_line(exc, raw), path=name) from None
        specs.append((name, text, spec, is_builtin))
    return specs


# (file name, file text, predicate name, parameters, body to fill, expression text)
_PendingPredicate = tuple[str, str, str, list[tuple[str, str]], PredicateBody, str]


def _declare(
    name: str,
    text: str,
    spec,
    PredicateSpec,
    scope: Scope,
    variables: dict[str, Any],
    pred_sources: dict[str, str],
    pending: list[_PendingPredicate],
) -> None:
    """One file's [defaults], [variables] and [predicates] into the shared scope; predicate bodies are
    type-checked later (`_check_predicates`), once every file has declared its own."""
    for sname, dspec in spec.defaults.items():
        if not _IDENT.match(sname):
            raise PacklintError(f"defaults: {sname!r} is not a valid name", path=name)
        if sname in scope.settings:
            raise PacklintError(f"defaults: {sname!r} is defined twice", path=name)
        scope.settings[sname] = Setting(sname, tuple(dspec.flags), None if dspec.value is None else str(dspec.value))
    for vname, value in spec.variables.items():
        if not _IDENT.match(vname):
            raise PacklintError(f"variables: {vname!r} is not a valid name", path=name)
        if vname in variables or vname in pred_sources:
            raise PacklintError(f"variables: {vname!r} is defined twice", path=name)
        variables[vname] = value
        if not isinstance(value, list):
            scope.constants[vname] = (value, "int" if isinstance(value, int) else STR)
    for pname, pspec in spec.predicates.items():
        if not _IDENT.match(pname):
            raise PacklintError(f"predicates: {pname!r} is not a valid name", path=name)
        if pname in pred_sources or pname in variables:
            raise PacklintError(f"predicates: {pname!r} is defined twice", path=name)
        if isinstance(pspec, str):
            pspec = PredicateSpec(expr=pspec)
        params = []
        for p in pspec.params:
            pn, _, pt = p.partition(":")
            pt = pt.strip() or STR
            if not _IDENT.match(pn.strip()) or pt not in ("str", "int", "bool"):
                raise PacklintError(f"predicates: {pname}: bad parameter {p!r} (write 'name' or 'name:int')", path=name)
            params.append((pn.strip(), pt))
        body = PredicateBody()
        scope.predicates[pname] = (params, body)
        pred_sources[pname] = pspec.expr
        pending.append((name, text, pname, params, body, pspec.expr))


def _check_predicates(pending: list[_PendingPredicate], scope: Scope) -> None:
    """Type-check predicates in dependency order (a predicate may use any other; cycles are errors)."""
    state: dict[str, int] = {}
    by_name = {p[2]: p for p in pending}

    def resolve(pname: str, chain: list[str]) -> None:
        if state.get(pname) == 2:
            return
        if state.get(pname) == 1:
            raise PacklintError(
                f"predicates: {pname}: refers to itself through {' -> '.join(chain + [pname])}", path=by_name[pname][0]
            )
        state[pname] = 1
        fname, ftext, _, params, body, expr_text = by_name[pname]
        try:
            tree = parse(expr_text)
        except ConditionError as exc:
            raise _cond_error(fname, ftext, f"predicate {pname}", expr_text, exc) from None
        for dep in _names_in(tree):
            if dep in by_name and dep != pname:
                resolve(dep, chain + [pname])
            elif dep == pname:
                raise PacklintError(f"predicates: {pname}: refers to itself", path=fname)
        local = Scope(
            variables=dict(params), predicates=scope.predicates, constants=scope.constants, settings=scope.settings
        )
        try:
            body.expr = check(tree, local)
        except ConditionError as exc:
            raise _cond_error(fname, ftext, f"predicate {pname}", expr_text, exc) from None
        body.type = body.expr.type
        state[pname] = 2

    for pname in by_name:
        resolve(pname, [])


def _names_in(node) -> set[str]:
    from packlint.conditions import Binary, Call, InList, Name, Unary

    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Name):
            out.add(n.ident)
        elif isinstance(n, Call):
            out.add(n.func)
            stack.extend(n.args)
        elif isinstance(n, Unary):
            stack.append(n.operand)
        elif isinstance(n, Binary):
            stack.extend((n.left, n.right))
        elif isinstance(n, InList):
            stack.append(n.operand)
    return out


def _compile_rule(r, fname: str, ftext: str, is_builtin: bool, scope: Scope, variables: dict) -> Rule:
    bound, items = _for_each(r, fname, variables)
    local = Scope(variables=bound, predicates=scope.predicates, constants=scope.constants, settings=scope.settings)
    c = _RuleCompiler(r.code, fname, ftext, local)
    fix = c.fix(r.fix) if r.fix is not None else None
    overrides = [
        Override(
            c.cond(o.when, f"override[{i}].when"),
            o.severity,
            c.tmpl(o.message, f"override[{i}].message"),
            c.tmpl(o.help, f"override[{i}].help"),
        )
        for i, o in enumerate(r.override)
    ]
    return Rule(
        code=r.code,
        name=r.name,
        severity=r.severity,
        summary=r.summary,
        message=c.required_tmpl(r.message, "message"),
        help=c.tmpl(r.help, "help"),
        when=c.cond(r.when, "when"),
        when_text=r.when,
        scope=r.scope,
        for_each=r.for_each,
        for_each_items=items,
        report_at=c.loc(r.report_at, "report_at"),
        related=[
            (c.loc(x.at, f"related[{i}].at"), c.required_tmpl(x.message, f"related[{i}].message"))
            for i, x in enumerate(r.related)
        ],
        undecided=r.undecided,
        exclusive=r.exclusive,
        overrides=overrides,
        explanation=r.explanation.strip(),
        references=list(r.references),
        examples=[Example(e.kind, e.script, dict(e.env), list(e.args), e.title, dict(e.code)) for e in r.example],
        file=fname,
        builtin=is_builtin,
        fix=fix,
        versions=r.versions,
        since=r.since,
    )


def _for_each(r, fname: str, variables: dict) -> tuple[dict[str, str], list[str]]:
    """The names `for_each` binds in the rule's expressions (`name`), and the items of a listed
    variable to run it over (built-in collections are enumerated per launch by the engine)."""
    bound: dict[str, str] = {}
    items: list[str] = []
    if r.for_each is None:
        return bound, items
    if r.for_each in FOR_EACH_BUILTIN:
        if r.for_each == "diagnostics" and r.scope != "script":
            raise PacklintError(f"rule {r.code}: for_each = 'diagnostics' needs scope = 'script'", path=fname)
        if r.for_each != "diagnostics":
            bound["name"] = STR
    elif isinstance(variables.get(r.for_each), list):
        items = list(variables[r.for_each])
        bound["name"] = STR
    else:
        raise PacklintError(
            f"rule {r.code}: for_each: {r.for_each!r} is neither a list in [variables] "
            f"nor one of {', '.join(sorted(FOR_EACH_BUILTIN))}",
            path=fname,
        )
    return bound, items


class _RuleCompiler:
    """Compiles one rule's conditions, templates and locations in its scope; an error names the rule,
    the field and where in the TOML file the text is."""

    def __init__(self, code: str, fname: str, ftext: str, local: Scope) -> None:
        self.code, self.fname, self.ftext, self.local = code, fname, ftext, local

    def cond(self, text: str, what: str) -> Expr:
        try:
            return compile_condition(text, self.local, BOOL)
        except ConditionError as exc:
            raise _cond_error(self.fname, self.ftext, f"rule {self.code}: {what}", text, exc) from None

    def tmpl(self, text: str | None, what: str) -> Template | None:
        return None if text is None else self.required_tmpl(text, what)

    def required_tmpl(self, text: str, what: str) -> Template:
        try:
            return compile_template(text, self.local)
        except ConditionError as exc:
            raise _cond_error(self.fname, self.ftext, f"rule {self.code}: {what}", text, exc) from None

    def loc(self, text: str, what: str) -> LocationSpec:
        kind, _, rest = text.partition(":")
        if kind not in LOCATION_KINDS:
            raise PacklintError(
                f"rule {self.code}: {what}: unknown location kind {kind!r} in {text!r} "
                f"(one of {', '.join(LOCATION_KINDS)})",
                path=self.fname,
            )
        takes_name, parts = LOCATION_KINDS[kind]
        name_t = None
        part = ""
        if takes_name:
            # the name may itself contain ':' only inside a template; the part is the last ':' field
            name_text, part = rest, ""
            for p in parts:
                if p and rest.endswith(":" + p):
                    name_text, part = rest[: -len(p) - 1], p
                    break
            if not name_text:
                raise PacklintError(f"rule {self.code}: {what}: {text!r} needs a name ('{kind}:NAME')", path=self.fname)
            name_t = self.tmpl(name_text, what)
        elif rest in parts and rest:
            part = rest
        elif rest:
            raise PacklintError(f"rule {self.code}: {what}: {kind!r} takes no name", path=self.fname)
        return LocationSpec(kind, name_t, part, text)

    def fix(self, f) -> FixSpec:
        if f.kind == "replace_prefix" and f.expect is None:
            raise PacklintError(
                f"rule {self.code}: fix: kind 'replace_prefix' needs `expect` (the text it replaces)", path=self.fname
            )
        return FixSpec(
            kind=f.kind,
            at=self.loc(f.at, "fix.at") if f.at else None,
            to=self.loc(f.to, "fix.to") if f.to else None,
            text=self.tmpl(f.text, "fix.text"),
            applicability=f.applicability,
            title=self.required_tmpl(f.title, "fix.title"),
            when=self.cond(f.when, "fix.when") if f.when else None,
            expect=self.tmpl(f.expect, "fix.expect"),
            refuse_if_read=f.refuse_if_read,
            key=self.tmpl(f.key, "fix.key") if f.key is not None else None,
            value=self.tmpl(f.value, "fix.value") if f.value is not None else None,
        )


def _cond_error(fname: str, ftext: str, what: str, expr_text: str, exc: ConditionError) -> PacklintError:
    """`file:line:col: rule PK001: when: message`, pointing into the TOML file where it can be found."""
    pos = max(0, min(exc.pos, len(expr_text)))
    where = ""
    idx = ftext.find(expr_text) if expr_text else -1
    if idx >= 0 and ftext.count(expr_text) == 1:
        abs_pos = idx + pos
        line = ftext.count("\n", 0, abs_pos) + 1
        col = abs_pos - (ftext.rfind("\n", 0, abs_pos) + 1) + 1
        where = f"{fname}:{line}:{col}: "
    else:
        where = f"{fname}: "
    snippet = expr_text if len(expr_text) <= 60 else expr_text[:57] + "..."
    return PacklintError(f"{where}{what}: {exc.message} (column {pos + 1} of {snippet!r})")
