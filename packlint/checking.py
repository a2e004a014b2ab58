"""The check itself, shared by `packlint check` and `packlint run`: files -> configuration -> launch
model -> rules -> suppressions -> baseline -> one `CheckResult` that every reporter renders.

One bad file (unreadable, or an internal error while analysing it) becomes a `FileError` for that file and the other
files are still checked; the command then exits 2."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packlint.check_workers import _JOB_READS, _JOB_TAINT, _SAVE, _STORED, _run_jobs
from packlint.config import CliSettings, Resolver, Settings, validate_codes
from packlint.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, FileError, PacklintError
from packlint.findings import SEVERITY_RANK, Finding, Summary
from packlint.model_view import as_model, launches

if TYPE_CHECKING:
    from packlint.rule_table import Rule

REPORT_URL = "https://github.com/packlint/packlint/issues"


class Sources:
    """Script text for code frames, suppressions and fingerprints: stdin by its display name, other
    files read on demand (decoded as the interpreter decodes them)."""

    def __init__(self) -> None:
        self._text: dict[str, str | None] = {}
        self._lines: dict[str, list[str] | None] = {}

    def add(self, path: str, data: bytes) -> None:
        from packlint.engine import decode_script

        self._text[path] = decode_script(data, path)
        self._lines.pop(path, None)

    def alias(self, path: str, same_as: str) -> None:
        """`path` names the text already added as `same_as` (the script as the model names it)."""
        self._text[path] = self._text[same_as]
        self._lines.pop(path, None)

    def text(self, path: str) -> str | None:
        """The text of a checked file, or of a file a finding points into (a code frame, suppressions);
        None for a file outside the checkout: its lines are never printed (packlint.scope)."""
        if path not in self._text:
            from packlint.scope import outside

            if outside(path, quote=True) is not None:
                self._text[path] = None
                return None
            try:
                from packlint.engine import decode_script
                from packlint.source import read_bytes

                self._text[path] = decode_script(read_bytes(path), path)
            except (PacklintError, OSError):
                self._text[path] = None
        return self._text[path]

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            t = self.text(path)
            self._lines[path] = None if t is None else [ln.rstrip("\r") for ln in t.split("\n")]
        return self._lines[path]

    __call__ = lines


def _read_stdin() -> bytes:
    from packlint.safe_io import read_stdin_bounded
    from packlint.source import MAX_SCRIPT_BYTES

    return read_stdin_bounded(MAX_SCRIPT_BYTES, sys.stdin.buffer)


class CheckOptions:
    """Everything a check needs besides the paths."""

    def __init__(
        self,
        *,
        cli: CliSettings | None = None,
        inherit_env: bool = False,
        script_args: list[str] | None = None,
        stdin_filename: str | None = None,
        read_stdin: Callable[[], bytes] | None = None,
        apply_exclude: bool = True,
        baseline: str | None = None,
        write_baseline: str | None = None,
        real_env: bool = False,
    ) -> None:
        self.cli = cli or CliSettings()
        self.inherit_env = inherit_env
        self.script_args = list(script_args or [])
        self.stdin_filename = stdin_filename
        self.read_stdin = read_stdin or _read_stdin  # (bounded: `check - < /dev/zero` ends, H22)
        self.apply_exclude = apply_exclude
        self.baseline = baseline
        self.write_baseline = write_baseline
        self.real_env = real_env  # `packlint run`: the caller's real environment, no assumed `env`
        self.keep_models = real_env  # `packlint run --probe` needs the launch models back
        self.result_cache = False  # `packlint check`: replay unchanged scripts' findings (packlint.result_cache)


class CheckResult:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._fingerprints: list[str] | None = None
        self.thresholds: list[int] = []  # per finding: the fail-on rank of the file it came from
        self.file_errors: list[FileError] = []
        self.files = 0
        self.no_launch = 0  # files in which no launch was recognised (PK903)
        self.no_launch_files: list[str] = []  # their paths (`check --statistics` lists them)
        self.excluded = 0
        self.suppressed = 0
        self.baselined = 0
        self.rules: dict[str, Rule] = {}  # code -> Rule, every rule loaded (for SARIF)
        self.sources = Sources()
        self.root: Path = Path.cwd()
        self.models: dict[str, dict] = {}  # checked path -> launch model (for `run --probe`)
        self.baseline_written: str | None = None
        self.doc_url: str | None = None  # the URL template of each rule's documentation
        self.hidden = 0  # findings below the --severity display filter
        self.checked_paths: list[str] = []  # every file checked, in order (JUnit lists clean ones too)
        # (code, severity, location, message) -> index: findings inside sourced files, reported once
        self.sourced_at: dict[tuple, int] = {}
        self._fixes: list | None = None

    def filter_display(self, level: str) -> None:
        """Keep only findings at or above `level` (`--severity`): display only, counted in `hidden`."""
        keep = [i for i, f in enumerate(self.findings) if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[level]]
        fps = self.fingerprints
        self.hidden += len(self.findings) - len(keep)
        self.findings = [self.findings[i] for i in keep]
        self.thresholds = [self.thresholds[i] for i in keep]
        self._fingerprints = [fps[i] for i in keep]

    @property
    def fixes(self) -> list:
        """Per finding: its concrete fix (packlint.fixes.Fix, checked with `bash -n`) or None."""
        if self._fixes is None or len(self._fixes) != len(self.findings):
            from packlint.configfix import CONFIG_KINDS, config_fix
            from packlint.fixes import Script, concrete_fix

            scripts: dict[str, Script | None] = {}
            out = []
            for f in self.findings:
                fix = None
                if f.fix is not None and f.fix.kind in CONFIG_KINDS:
                    path = f.fix.start.path
                    text = self.sources.text(path)
                    fix = config_fix(f, path, text)[0] if text is not None else None
                elif f.fix is not None:
                    path = f.fix.start.path
                    if path not in scripts:
                        text = self.sources.text(path)
                        scripts[path] = None if text is None else Script(path, text)
                    script = scripts[path]
                    if script is not None:
                        fix = concrete_fix(f, script)
                out.append(fix)
            self._fixes = out
        return self._fixes

    def doc_url_for(self, code: str) -> str | None:
        """The rule's documentation URL from the `doc-url` template (None for a user rule's code)."""
        from packlint.config import DEFAULT_DOC_URL

        rule: Any = self.rules.get(code)
        if rule is None:
            return None
        from packlint.rule_docs import anchor

        return (self.doc_url or DEFAULT_DOC_URL).format(
            code=rule.code, code_lower=rule.code.lower(), name=rule.name, anchor=anchor(rule)
        )

    @property
    def fingerprints(self) -> list[str]:
        """Stable ids of the findings (SARIF partialFingerprints, JSON, baselines), made on first use."""
        if self._fingerprints is None or len(self._fingerprints) != len(self.findings):
            from packlint.baseline import fingerprints

            self._fingerprints = fingerprints(self.findings, self.sources.lines, self.root)
        return self._fingerprints

    @fingerprints.setter
    def fingerprints(self, value: list[str]) -> None:
        self._fingerprints = value

    @property
    def summary(self) -> Summary:
        return Summary.of(
            self.findings, self.files, suppressed=self.suppressed, baselined=self.baselined, no_launch=self.no_launch
        )

    @property
    def blocking(self) -> int:
        return sum(1 for f, t in zip(self.findings, self.thresholds, strict=True) if SEVERITY_RANK[f.severity] >= t)

    @property
    def failed(self) -> bool:
        return bool(self.file_errors)

    def exit_code(self, exit_zero: bool = False) -> int:
        if self.failed:
            return EXIT_USAGE
        if exit_zero or self.baseline_written:
            return EXIT_OK
        return EXIT_FINDINGS if self.blocking else EXIT_OK


def error_result(message: str) -> CheckResult:
    """A result that holds only one run-level error (a bad config or rule table): every format can still
    render a valid document from it."""
    r = CheckResult()
    r.file_errors.append(FileError(None, message, "error"))
    return r


class _Tables:
    """Rule tables and enabled rules, built once per distinct configuration."""

    def __init__(self) -> None:
        self._tables: dict[tuple, object] = {}
        self._validated: set[int] = set()

    def seed(self, key: tuple, table) -> None:
        self._tables[key] = table

    def table(self, settings: Settings):
        from packlint.rule_table import load_table

        key = settings.table_key()
        if key not in self._tables:
            self._tables[key] = load_table(list(key))
        table = self._tables[key]
        if id(settings) not in self._validated:
            validate_codes(settings, table)
            self._validated.add(id(settings))
        return table


def _severity_overrides(findings: list[Finding], settings: Settings, table) -> list[Finding]:
    if not settings.severity:  # (the result cache replays without a table only then: replay_all)
        return findings
    wanted = {}
    for code, level in settings.severity.items():
        rule = table.by_code(code)
        if rule is not None:
            wanted[rule.code] = level
    out = []
    for f in findings:
        new_level = wanted.get(f.code)
        # "could not decide" infos stay infos: they say the rule could not run, not that it fired
        if new_level and not (f.severity == "info" and f.message.startswith("could not decide")):
            f = f.replace(severity=new_level)
        out.append(f)
    return out


def check_paths(paths: list[str], options: CheckOptions) -> CheckResult:
    """Check every script under `paths`. Raises PacklintError only for run-level errors (a bad
    command-line rule file or selector, a bad --config); per-file problems become FileErrors.

    The cyclic garbage collector is off for the whole run, as in `_run_jobs`: loading the rule table
    and importing the analysis make tens of thousands of objects and no garbage cycles, and the
    collector's passes over them cost ~3-5 ms of a ~90 ms cold start."""
    from packlint.caches import IN_RUN

    enabled = gc.isenabled()
    gc.disable()
    IN_RUN[0] = True  # (each program read once in this run, cache or not: codebase.reader)
    try:
        return _check_paths(paths, options)
    finally:
        IN_RUN[0] = False
        if enabled:
            gc.enable()


def _check_paths(paths: list[str], options: CheckOptions) -> CheckResult:
    from packlint.codebase.resolve import clear_run_memos

    clear_run_memos()
    store = _result_store(paths, options)  # (records every read of the run from here on)
    try:
        return _check_recorded(paths, options, store)
    finally:
        if store is not None:
            from packlint.result_cache import stop

            stop()


_RUNS = [0]  # check runs in this process


def _result_store(paths: list[str], options: CheckOptions):
    """The result cache for this run, or None: off with --no-cache, for stdin, an inherited environment or
    a caller that needs the launch models, and in any run but a process's first (earlier runs' memos in
    the process would be reads this run does not see; `packlint check` is one run per process)."""
    from packlint.discover import STDIN

    _RUNS[0] += 1
    if not options.result_cache or _RUNS[0] > 1 or options.keep_models or options.inherit_env or options.real_env:
        return None
    from packlint.caches import disabled, location

    if disabled() or STDIN in paths:
        return None
    from packlint import result_cache

    result_cache.start(str(location()))
    return result_cache.Store(str(location()))


def _check_recorded(paths: list[str], options: CheckOptions, store) -> CheckResult:
    from packlint.baseline import repo_root
    from packlint.discover import STDIN, discover
    from packlint.scope import set_checked

    set_checked([p for p in paths if p != STDIN])
    cli = options.cli
    result = CheckResult()
    result.root = repo_root()
    if store is None:
        base_table = _validated_table(cli)  # run-level validation of the command line: one error, before any file
    resolver = Resolver(cli)
    recorded = None
    if options.baseline:
        from packlint.baseline import read_baseline

        recorded = read_baseline(options.baseline)

    paths = paths or ["."]
    if paths.count(STDIN) > 1:
        raise PacklintError("'-' (stdin) can be given only once")
    from packlint.result_cache import aside

    with aside():  # (which files are checked is decided again every run: no script's input)
        files, errors = discover(paths)
    for err in errors:
        result.file_errors.append(FileError(err.path, err.message, "read"))
    if store is not None:
        # every file unchanged since a run like this one: its findings, without loading the rule table
        # (the run that stored them validated the same selectors against the same rule files)
        with aside():  # (looking the files up reads their settings: not an input of every script)
            replayed = store.replay_all(files, options, resolver, result)
        if replayed is not None:
            for job, outcome in replayed:
                _collect(result, job, outcome)
            store.report(len(replayed), 0, 0)
            _finish(result, recorded, options)
            return result
        base_table = _validated_table(cli)
    tables = _Tables()
    tables.seed(tuple(str(Path(p)) for p in cli.rule_files), base_table)
    jobs = _plan_jobs(files, options, resolver, tables, result)
    outcomes = _run_jobs(jobs, keep_models=options.keep_models) if store is None else _run_cached(jobs, store, cli)
    for job, outcome in zip(jobs, outcomes, strict=True):
        _collect(result, job, outcome)
    _finish(result, recorded, options)
    return result


def _run_cached(jobs: list[_Job], store, cli: CliSettings) -> list:
    """Every job's outcome: replayed from the result cache where nothing its run read has changed, else
    analysed; then the analysed ones stored (unless something unrecordable decided them: caches.taint)."""
    from packlint.result_key import job_key

    keys = [job_key(j, cli) for j in jobs]
    outcomes = [store.lookup(k) for k in keys]
    todo = [i for i, o in enumerate(outcomes) if o is None]
    _JOB_TAINT.clear()
    _JOB_READS.clear()
    # (forked workers store their own jobs' outcomes: check_workers._flush; this process, the jobs it ran)
    plans = [_PLAN_READS.get(jobs[i].path, set()) for i in todo]
    _SAVE[:] = [store, [keys[i] for i in todo], plans]
    _STORED[0] = 0
    try:
        fresh = _run_jobs([jobs[i] for i in todo], keep_models=False)
    finally:
        _SAVE.clear()
    keep: list[tuple[str, tuple, set[int]]] = []
    for n, (i, outcome) in enumerate(zip(todo, fresh, strict=True)):
        outcomes[i] = outcome
        if isinstance(outcome, tuple) and not _JOB_TAINT.get(n, True):
            keep.append((keys[i], outcome, _JOB_READS[n].absorb(plans[n])))  # (in place)
    _JOB_READS.clear()
    _PLAN_READS.clear()
    store.report(len(jobs) - len(todo), len(todo), store.save(keep) + _STORED[0])
    return outcomes


def _validated_table(cli: CliSettings):
    """The command line's rule table, its selectors checked against it (unknown code: one error)."""
    from packlint.engine import unknown_selectors
    from packlint.rule_table import load_table

    base_table = load_table(cli.rule_files)
    bad = unknown_selectors(base_table, (cli.select or []) + cli.ignore + list(cli.extend_select))
    if bad:
        from packlint.engine import unknown_selectors_message

        raise PacklintError(unknown_selectors_message(base_table, bad))
    return base_table


def _plan_jobs(files: list[str], options: CheckOptions, resolver: Resolver, tables: _Tables, result: CheckResult):
    """One job per file with what its configuration decides (rules, environment, code-base options);
    excluded files are counted, configuration errors reported once each. Fills _RULE_SETS."""
    from packlint.discover import STDIN
    from packlint.engine import select_rules
    from packlint.result_cache import aside

    _PLAN_READS.clear()
    config_errors: set[str] = set()
    rule_cache: dict[tuple, tuple[list, list]] = {}
    from packlint.caches import Memo

    root_memo: dict[str, tuple[str | None, str]] = Memo(keep=False)  # directory -> checkout root, for this run
    file_memo: dict[str, bool] = Memo(keep=False)  # path -> is a file (program look-ups), shared likewise
    jobs: list[_Job] = []
    for path in files:
        display = (options.stdin_filename or "<stdin>") if path == STDIN else path
        try:
            with aside() as _PLAN_READS[path]:  # (what its settings read is the file's own input, not every script's)
                settings = resolver.settings_for((options.stdin_filename or STDIN) if path == STDIN else path)
            table = tables.table(settings)
        except PacklintError as exc:
            msg = exc.one_line()
            if msg not in config_errors:
                config_errors.add(msg)
                result.file_errors.append(FileError(None, msg, "config"))
            continue
        for r in table.rules:
            result.rules.setdefault(r.code, r)
        if options.apply_exclude and path != STDIN and settings.excluded(path):
            # a directory walk skips excluded files; a file named on the command line (as pre-commit
            # names them) is skipped too, like ruff's force-exclude
            result.excluded += 1
            continue
        if result.doc_url is None:
            result.doc_url = settings.doc_url
        per_file = settings.ignores_for(display if path == STDIN else path)
        key = (id(table), tuple(settings.select), tuple(settings.ignore), tuple(per_file))
        if key not in rule_cache:
            rule_cache[key] = (select_rules(table, settings.select, settings.ignore + per_file), table.rules)
        job = _Job(
            path,
            display,
            options.read_stdin() if path == STDIN else None,
            {} if options.real_env else dict(settings.env),
            options.inherit_env or options.real_env,
            list(options.script_args),
            tuple(settings.known_env),
            key,
            settings,
            table,
        )
        job.code.root_memo, job.code.file_memo = root_memo, file_memo
        jobs.append(job)
    _RULE_SETS.clear()
    _RULE_SETS.update(rule_cache)
    return jobs


def _collect(result: CheckResult, job: _Job, outcome) -> None:
    """One file's outcome into the run's result: its findings (with the configured severities and
    fail-on threshold), its text for reports, or its error."""
    if isinstance(outcome, FileError):
        result.file_errors.append(outcome)
        return
    text, model, findings, suppressed, no_launch, main = outcome
    result.no_launch += no_launch
    if no_launch:
        result.no_launch_files.append(job.display)
    if text is not None:  # (None from a worker or the result cache: read again on demand)
        result.sources.add(job.display, text)
    if model is not None:
        result.models[job.display] = model
    if main != job.display and text is not None:  # (else read on demand, as a worker's)
        result.sources.alias(main, job.display)
    findings = _severity_overrides(findings, job.settings, job.table)
    result.checked_paths.append(job.display)
    result.files += 1
    result.suppressed += suppressed
    threshold = SEVERITY_RANK[job.settings.fail_on]
    for f in findings:
        # a finding inside a sourced (or sbatch'ed, bash-run) file: reported once, however many checked scripts reach
        # that file and whether or not it is checked itself, with every caller's related locations; and once when two
        # analyses reach it under different premises (the stronger evidence kept: Finding.weaker_than)
        key = (f.code, f.location, f.bare_message())
        at = result.sourced_at.get(key)
        if at is None:
            result.sourced_at[key] = len(result.findings)
            result.findings.append(f)
            result.thresholds.append(threshold)
            continue
        first = result.findings[at]
        if first.weaker_than(f):
            first, f = f, first
            result.thresholds[at] = threshold
        extra = tuple(r for r in f.related if r not in first.related)
        result.findings[at] = first.replace(related=first.related + extra) if extra else first
        result.thresholds[at] = min(result.thresholds[at], threshold)


class _Job:
    """One file to analyse, with what its configuration decided."""

    __slots__ = (
        "path",
        "display",
        "stdin_text",
        "env",
        "inherit_env",
        "args",
        "known_env",
        "rules_key",
        "settings",
        "table",
        "code",
    )

    def __init__(
        self, path, display, stdin_text, env, inherit_env, args, known_env, rules_key, settings, table
    ) -> None:
        self.path, self.display, self.stdin_text, self.env = path, display, stdin_text, env
        self.inherit_env, self.args, self.known_env, self.rules_key = inherit_env, args, known_env, rules_key
        self.settings, self.table = settings, table
        self.code = settings.code_options()  # how to find the launched code (packlint.codebase)


_RULE_SETS: dict[tuple, tuple] = {}  # rules_key -> (enabled rules, every rule of the table)


def _config_launch(job: _Job, config_name: str, text: bytes, is_stdin: bool) -> tuple[bytes | None, bool] | FileError:
    """`packlint check x.yaml`: a config file of a known stack, as its usual launch reads it (from stdin,
    e.g. the editor's unsaved text, under the name it is given): (that one-line launch script, whether
    its program is a stand-in whose code is not read), or (None, False) for a script, or a FileError."""
    if not config_name.lower().endswith((".yaml", ".yml", ".json", ".toml")):
        return None, False
    from packlint.configs import set_text_override
    from packlint.configs.standalone import KNOWN, STAND_IN_PROGRAM, launch_for

    if is_stdin:
        set_text_override(config_name, text)
    made = launch_for(config_name)
    if made is None:
        return FileError(
            job.display,
            f"not a launch script, nor a config file of a stack packlint recognises by its keys ({KNOWN})",
            "read",
        )
    return made[0], made[1] in STAND_IN_PROGRAM


def _analyse(job: _Job, keep_model: bool):
    """Parse, interpret and check one file: (text, model or None, findings, suppressed) or a FileError.
    Workers do not send the launch model back (it can be large); `run` and single files keep it.
    Runs in the main process or in a worker (forked, so it sees the rule tables already loaded)."""
    from packlint.api import inspect_script
    from packlint.engine import check_model_detailed
    from packlint.source import read_bytes

    rules, known_rules = _RULE_SETS[job.rules_key]
    is_stdin = job.stdin_text is not None
    from packlint.configs.hydra import set_code_bases

    set_code_bases(job.code.code_bases if job.code is not None else ())
    try:
        text = job.stdin_text if is_stdin else read_bytes(job.path)
        sources = Sources()
        sources.add(job.display, text)
        config_name = job.display if is_stdin else job.path
        made = _config_launch(job, config_name, text, is_stdin)
        if isinstance(made, FileError):
            return made
        synthetic, stand_in = made
        # a file is read by inspect_script itself, so `source` resolves beside the script
        model = inspect_script(
            job.display if is_stdin else job.path,
            env=job.env,
            inherit_env=job.inherit_env,
            args=job.args,
            known_env=job.known_env,
            text=synthetic if synthetic is not None else text if is_stdin else None,
            display_path=job.display if is_stdin or synthetic is not None else None,
            stack_versions=getattr(job.settings, "stack_versions", None) or None,
        )
        main = str(model.get("script") or job.display)
        if main != job.display:
            sources.alias(main, job.display)
        from packlint.codebase import CodeSession
        from packlint.codebase.options import CodeOptions

        # the code is looked up from where the file is (stdin: the name it is given, `--stdin-filename`,
        # as the fix loop and the editor pass it), never from the current directory, which would make
        # a finding decided from the code, and its fix, depend on where packlint was started
        options = CodeOptions(enabled=False) if stand_in else job.code
        session = CodeSession(job.display if is_stdin else job.path, options)
        if os.environ.get("PACKLINT_EAGER_CODE") == "1":
            # benchmarks/codebase_bench.py: read every launch's code as a rule asking for it would
            for launch in launches(as_model(model)):
                session.facts(launch)
        findings, suppressed = check_model_detailed(
            model,
            rules,
            script_text=text if synthetic is None else synthetic,
            read_text=sources.text,
            known_rules=known_rules,
            code=_no_code if stand_in else session.facts,
        )
        no_launch = not launches(as_model(model))
        return text, (model if keep_model else None), findings, suppressed, no_launch, main
    except PacklintError as exc:
        return FileError(exc.path or job.display, exc.message, "read")
    except RecursionError:
        return FileError(job.display, "the script is nested too deeply to analyse", "error")
    except Exception as exc:  # an internal error: one diagnostic for this file, the run goes on
        if os.environ.get("PACKLINT_DEBUG"):
            raise
        return FileError(
            job.display,
            f"internal error: {type(exc).__name__}: {exc} -- this is a bug in packlint; please "
            f"report it at {REPORT_URL} with the script (PACKLINT_DEBUG=1 shows a traceback)",
            "internal",
        )
    finally:
        set_code_bases(())  # (the run's --code-base stays this file's: a later check in the process has its own)


def _no_code(launch: Any, variant: Any = None) -> None:
    """The code facts of a stand-in launch whose program is a placeholder (configs/standalone.py): none."""
    return None


_PLAN_READS: dict[str, set[int]] = {}  # path -> what resolving its settings read (result cache runs)


def _finish(result: CheckResult, recorded: dict[str, int] | None, options: CheckOptions) -> None:
    from packlint.baseline import filter_new, fingerprints, write_baseline

    order = sorted(range(len(result.findings)), key=lambda i: result.findings[i].sort_key())
    result.findings = [result.findings[i] for i in order]
    result.thresholds = [result.thresholds[i] for i in order]
    if not (options.write_baseline or recorded is not None):
        return  # fingerprints are computed when a report asks for them (CheckResult.fingerprints)
    result.fingerprints = fingerprints(result.findings, result.sources.lines, result.root)
    if options.write_baseline:
        write_baseline(options.write_baseline, result.findings, result.fingerprints, result.root)
        result.baseline_written = options.write_baseline
    if recorded is not None:
        prints = result.fingerprints
        keep, hidden = filter_new(result.findings, prints, recorded)
        result.findings = [result.findings[i] for i in keep]
        result.thresholds = [result.thresholds[i] for i in keep]
        result.fingerprints = [prints[i] for i in keep]
        result.baselined = hidden
