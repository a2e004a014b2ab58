"""Runs the rule table over one launch model and turns what fires into findings.

The engine knows nothing about packing: it evaluates each rule's condition in every variant of every
launch (for each item of the rule's `for_each`), then merges the variants:

- fires in every variant of a launch, at the same place  -> `certain`
- fires in some variants                                 -> `possible`, naming the branch decisions
                                                            (`when`) that separate them from the rest
- never fires but is undecided (a value packlint could not determine) in some variant
                                                         -> one `info` "could not decide", when the rule
                                                            says `undecided = "info"`
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from packlint.conditions import EvalContext, Expr, Unk
from packlint.conditions.tree import And, PredicateCall, Var
from packlint.findings import SEVERITY_RANK, Finding, FixPlan, Location, Related
from packlint.model_view import (
    as_diagnostic,
    as_model,
    config_files,
    config_settings,
    config_stack,
    diagnostics,
    flag_occurrences,
    launch_config,
    launches,
    variant_config,
    variants,
)
from packlint.rule_table import (
    FixSpec,
    LocationSpec,
    Rule,
    RuleTable,
    parse_versions,
    version_applies,
    version_in_range,
)

if TYPE_CHECKING:
    from packlint.model_types import ConfigJSON, DiagnosticJSON, LaunchJSON, ScriptModelJSON, SettingJSON, VariantJSON

    # (launch, variant) -> packlint.codebase.CodeFacts | None: the facts about the code a launch runs
    CodeFn = Callable[[LaunchJSON, VariantJSON], Any]


class _Hit:
    __slots__ = ("variant", "severity", "message", "help", "location", "related", "fix")

    def __init__(
        self,
        variant: int,
        severity: str,
        message: str,
        help: str | None,
        location: Location,
        related: tuple[Related, ...],
        fix: FixPlan | None = None,
    ) -> None:
        self.variant, self.severity, self.message, self.help = variant, severity, message, help
        self.location, self.related, self.fix = location, related, fix


def select_rules(table: RuleTable, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Rule]:
    """Rules enabled by `--select` / `--ignore` (codes, code prefixes or names; `ALL`)."""

    def matches(rule: Rule, pat: str) -> bool:
        pat = pat.strip()
        return pat.upper() == "ALL" or rule.code.startswith(pat.upper()) or rule.name == pat.lower()

    select = [s for s in select if s.strip()]
    ignore = [s for s in ignore if s.strip()]
    out = []
    for rule in table.rules:
        if select and not any(matches(rule, s) for s in select):
            continue
        if any(matches(rule, s) for s in ignore):
            continue
        out.append(rule)
    return out


def unknown_selectors(table: RuleTable, patterns: Iterable[str]) -> list[str]:
    bad = []
    for pat in patterns:
        p = pat.strip()
        if not p or p.upper() == "ALL":
            continue
        if not any(r.code.startswith(p.upper()) or r.name == p.lower() for r in table.rules):
            bad.append(pat)
    return bad


def unknown_selectors_message(table: RuleTable, bad: list[str]) -> str:
    """`unknown rule code or name: PK10 (did you mean PK101?)`: the closest code or name per selector."""
    import difflib

    words = [r.code for r in table.rules] + [r.name for r in table.rules]
    parts = []
    codes = {r.code for r in table.rules}
    for b in bad:
        key = b.strip()
        # a code typed with a letter for a digit (PK1O1, PK1l1) is that code, before any fuzzy match
        digits = key.upper()[:2] + key.upper()[2:].translate(str.maketrans("OIL", "011"))
        if digits in codes:
            parts.append(f"{b} (did you mean {digits}?)")
            continue
        close = difflib.get_close_matches(
            key.upper() if key[:1].isalpha() and key.upper()[:2] in {r.code[:2] for r in table.rules} else key.lower(),
            words,
            n=1,
            cutoff=0.6,
        )
        parts.append(f"{b} (did you mean {close[0]}?)" if close else b)
    return f"unknown rule code or name: {', '.join(parts)} (see `packlint rules`)"


class _BashCheck:
    """`bash -n` on the script (run at most once per file, and only when a rule asks)."""

    def __init__(self, text: bytes | None, path: str | None) -> None:
        self.text = text
        self.path = path
        self.result: Any = None

    def __call__(self) -> Any:
        if self.result is None:
            self.result = self._run()
        return self.result

    def _run(self) -> bool:
        from packlint.parse import bash_syntax_check

        data = self.text
        if data is None and self.path:
            from packlint.safe_io import read_regular
            from packlint.source import MAX_SCRIPT_BYTES

            data = read_regular(self.path, MAX_SCRIPT_BYTES)
            if data is None:
                return True
        if data is None:
            return True
        verdict = bash_syntax_check(data.replace(b"\r\n", b"\n"))  # (None: no bash to ask)
        return verdict is None or not verdict[0]


def check_model(
    model: Mapping[str, Any],
    rules: list[Rule],
    *,
    script_text: bytes | None = None,
    read_text: Callable[[str], str | None] | None = None,
    known_rules: list[Rule] | None = None,
    code: CodeFn | None = None,
) -> list[Finding]:
    """Every finding of `rules` on one launch model (the JSON dict of `packlint inspect`, see docs/launch-model.md).

    With `script_text` or `read_text` (path -> decoded text), `# packlint: disable=...` comments are
    applied and the rules that report suppressions (PK901) run; see packlint.suppressions."""
    return check_model_detailed(
        model, rules, script_text=script_text, read_text=read_text, known_rules=known_rules, code=code
    )[0]


def check_model_detailed(
    doc: Mapping[str, Any],
    rules: list[Rule],
    *,
    script_text: bytes | None = None,
    read_text: Callable[[str], str | None] | None = None,
    known_rules: list[Rule] | None = None,
    code: CodeFn | None = None,
) -> tuple[list[Finding], int]:
    """`check_model`, also returning how many findings suppression comments silenced.

    `code`: (launch, variant) -> CodeFacts | None, the facts about the code a launch runs
    (packlint.codebase.CodeSession.facts); conditions reach it through EvalContext.code_facts()."""
    model = as_model(doc)
    findings: list[Finding] = []
    bash = _BashCheck(script_text, model.get("script"))
    exclusive_fired = False
    script_rules = [r for r in rules if r.scope == "script"]
    launch_rules = [r for r in rules if r.scope == "launch"]
    for rule in script_rules:
        new = _run_script_rule(model, rule, bash)
        if new and rule.exclusive:
            exclusive_fired = True
        findings.extend(new)
    if not exclusive_fired:
        for launch in launches(model):
            # one context per variant, shared by every rule: what they compute of the variant is kept
            contexts = [EvalContext(model, launch, v, code=code) for v in variants(launch)]
            launch_loc = Location.from_json(launch) or _script_location(model)
            dead_heads: dict[str, bool] = {}  # a first term shared by rules -> not true in any variant
            for rule in launch_rules:
                # most rules are false for most launches: settle that without building anything
                if rule.for_each is None and (head := _head(rule)) is not None:
                    dead = dead_heads.get(head[0])
                    if dead is None:
                        dead = dead_heads[head[0]] = all(_eval(head[1], c) is not True for c in contexts)
                    if dead:
                        continue
                if rule.for_each is None and (
                    _cannot_fire(rule, contexts[0])
                    if len(contexts) == 1
                    else all(_cannot_fire(rule, c) for c in contexts)
                ):
                    continue
                findings.extend(_run_launch_rule(model, launch, rule, code, contexts, launch_loc))
    findings = group_findings(findings)
    suppressed = 0
    if script_text is not None or read_text is not None:
        # a script bash rejects is analysed only up to its error: a directive after it cannot be
        # judged unused, so unused-suppression judging is off for such scripts
        parses = not any(d.get("code") == "syntax" and d.get("severity") == "error" for d in diagnostics(model))
        findings, suppressed = _apply_suppressions(
            model,
            findings,
            rules,
            script_text,
            read_text,
            known_rules if known_rules is not None else rules,
            judge=parses and not exclusive_fired,
        )
    return sorted(findings, key=Finding.sort_key), suppressed


# ---------------------------------------------------------------------------------------------- grouping

MAX_RELATED_PER_MESSAGE = 3


def group_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per (code, primary location, message): a setting that reaches several launches is
    reported once, with the launches as related notes (at most MAX_RELATED_PER_MESSAGE per note text,
    then "and N more launches"); certain when any member is certain; the highest severity wins."""
    groups: dict[tuple[str, Location, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.code, f.location, f.message), []).append(f)
    out = []
    for members in groups.values():
        first = members[0]
        if len(members) == 1:
            out.append(first)
            continue
        related: list[Related] = []
        for m in members:
            for r in m.related:
                if r not in related:
                    related.append(r)
        by_message: dict[str, list[Related]] = {}
        for r in related:
            by_message.setdefault(r.message, []).append(r)
        capped: list[Related] = []
        for r in related:
            same = by_message[r.message]
            idx = same.index(r)
            if idx < MAX_RELATED_PER_MESSAGE - 1 or len(same) <= MAX_RELATED_PER_MESSAGE:
                capped.append(r)
            elif idx == MAX_RELATED_PER_MESSAGE - 1:
                more = len(same) - MAX_RELATED_PER_MESSAGE
                capped.append(Related(r.location, f"{r.message} (and {more} more launches)"))
        certain = any(m.certainty == "certain" for m in members)
        severity = max((m.severity for m in members), key=SEVERITY_RANK.__getitem__)
        out.append(
            Finding(
                first.code,
                first.name,
                severity,
                first.message,
                first.location,
                tuple(capped),
                "certain" if certain else "possible",
                () if certain else first.when,
                first.help,
                first.fix,
            )
        )
    return out


def _apply_suppressions(
    model: ScriptModelJSON,
    findings: list[Finding],
    rules: list[Rule],
    script_text: bytes | None,
    read_text: Callable[[str], str | None] | None,
    known: list[Rule],
    judge: bool,
) -> tuple[list[Finding], int]:
    from packlint import suppressions as sup

    main_path = str(model.get("script") or "-")
    cache: dict[str, Any] = {}

    def directives_of(path: str) -> Any:
        if path not in cache:
            text = None
            if path == main_path and script_text is not None:
                text = decode_script(script_text, path)
            elif read_text is not None:
                text = read_text(path)
            cache[path] = None if text is None else sup.load_file_directives(path, text)
        return cache[path]

    kept, suppressed = sup.suppress(findings, main_path, directives_of)
    if not judge:
        return kept, suppressed
    # the rules that turn `unused-suppression` diagnostics into findings (PK901), found by asking them
    probe: DiagnosticJSON = {"code": sup.UNUSED_DIAG_CODE, "message": "", "file": main_path, "line": 1, "column": 1}
    reporters = [r for r in rules if r.scope == "script" and r.for_each == "diagnostics" and _fires_on(r, model, probe)]
    exempt = [r for r in known if r.scope == "script" and r.for_each == "diagnostics" and _fires_on(r, model, probe)]
    if not reporters:
        return kept, suppressed
    diags = sup.unused_diagnostics(directives_of(main_path), rules, known, exempt)
    if not diags:
        return kept, suppressed
    pseudo = as_model({**model, "diagnostics": diags})
    reports: list[Finding] = []
    for rule in reporters:
        reports.extend(_run_script_rule(pseudo, rule, _BashCheck(None, None)))
    reports, n = sup.suppress_reports(reports, directives_of, main_path)
    return kept + reports, suppressed + n


def _fires_on(rule: Rule, model: ScriptModelJSON, item: DiagnosticJSON) -> bool:
    ctx = EvalContext(model, None, None, _BashCheck(None, None))
    ctx.item = item
    return _eval(rule.when, ctx) is True


def decode_script(data: bytes, path: str) -> str:
    """Script bytes as the interpreter sees them (BOM removed, UTF-16 decoded, CRLF -> LF), as text."""
    try:
        from packlint.source import prepare

        return prepare(data, path).data.decode("utf-8", "replace")
    except Exception:
        return data.decode("utf-8", "replace").replace("\r\n", "\n")


# ---------------------------------------------------------------------------------------------- script


def _script_location(model: ScriptModelJSON) -> Location:
    return Location(str(model.get("script") or "-"), 1, 1, 1, 1)


def _run_script_rule(model: ScriptModelJSON, rule: Rule, bash: _BashCheck) -> list[Finding]:
    ctx = EvalContext(model, None, None, bash)
    items: list[DiagnosticJSON | None] = list(diagnostics(model)) if rule.for_each == "diagnostics" else [None]
    out = []
    for item in items:
        ctx.item = item
        if _eval(rule.when, ctx) is True:
            hit = _hit(rule, ctx, 0, Location.from_json(item) or _script_location(model))
            out.append(
                Finding(
                    rule.code,
                    rule.name,
                    hit.severity,
                    hit.message,
                    hit.location,
                    hit.related,
                    "certain",
                    (),
                    hit.help,
                    hit.fix,
                )
            )
    return out


# ---------------------------------------------------------------------------------------------- launches


def _conjuncts(rule: Rule) -> tuple[Expr, ...] | None:
    """The top-level `and` terms of the condition of a rule that reports only what fires
    (`undecided = "ignore"`), kept on the rule; None for a rule that also reports undecided results.

    Three-valued `a and b` is true only when every term is true, so such a rule cannot fire in a
    context where one term is not true (false *or* undecided): `stack() == 'trl' and ...` on a launch
    whose stack is not known stops at its first term instead of evaluating the rest (which the `and`
    itself must do, to tell false from undecided)."""
    terms = rule.__dict__.get("_conjuncts", _UNSET)
    if terms is _UNSET:
        terms = None
        if rule.undecided != "info":
            found: list[Expr] = []
            stack = [rule.when]
            while stack:
                e = stack.pop()
                if isinstance(e, And):
                    stack += (e.right, e.left)
                else:
                    found.append(e)
            terms = tuple(found)
        rule.__dict__["_conjuncts"] = terms
    return terms


_UNSET = object()


def _head(rule: Rule) -> tuple[str, Expr] | None:
    """(name, term) when the first of the rule's `_conjuncts` is a predicate without parameters (`lf`,
    `megatron_launch`): many rules start with the same one, and one evaluation per launch settles
    every rule it rules out."""
    head = rule.__dict__.get("_head", _UNSET)
    if head is _UNSET:
        terms = _conjuncts(rule)
        first = terms[0] if terms else None
        head = (first.name, first) if isinstance(first, PredicateCall) and not first.params else None
        rule.__dict__["_head"] = head
    return head


def _cannot_fire(rule: Rule, ctx: EvalContext) -> bool:
    """Whether the rule's condition (no `for_each`) settles to "nothing to report" in this context:
    false, or (for a rule that ignores undecided results) any term not true. Conditions have no
    effects besides memos, so stopping early changes nothing but the time."""
    terms = _conjuncts(rule)
    if terms is None:
        return _eval(rule.when, ctx) is False
    for t in terms:  # noqa: SIM110 (a loop: no generator frame per rule and launch)
        if _eval(t, ctx) is not True:
            return True
    return False


def _item_guards(rule: Rule) -> tuple[Expr, ...]:
    """The top-level `and` terms of a `for_each` rule's condition that do not read the item
    (`code_known()` in PK203, `flags_checked() and flags_closed()` in PK201), kept on the rule.

    Three-valued `and` is false as soon as any term is false, so one such term false in a variant
    settles every item of it: the engine evaluates these once per variant instead of once per item."""
    guards = rule.__dict__.get("_item_guards")
    if guards is None:
        terms: list[Expr] = []
        if rule.for_each is not None and rule.scope == "launch":  # a script rule's item is ctx.item
            stack = [rule.when]
            while stack:
                e = stack.pop()
                if isinstance(e, And):
                    stack += (e.right, e.left)
                elif not _reads_bindings(e):
                    terms.append(e)
        guards = rule.__dict__["_item_guards"] = tuple(terms)
    return guards


def _reads_bindings(expr: Any) -> bool:
    """Whether an expression reads a bound name (a `Var`) outside the bodies of the predicates it
    calls (a predicate body sees only its own parameters, which come from the call's arguments)."""
    if isinstance(expr, Var):
        return True
    slots = [slot for klass in type(expr).__mro__ for slot in klass.__dict__.get("__slots__", ())]
    for slot in slots:
        if slot == "body":  # PredicateCall.body
            continue
        value = getattr(expr, slot, None)
        children = value if isinstance(value, list | tuple) else (value,)
        if any(isinstance(c, Expr) and _reads_bindings(c) for c in children):
            return True
    return False


def _items(rule: Rule, variant: VariantJSON, ctx: EvalContext | None = None) -> Sequence[str | None]:
    if rule.for_each is None:
        return [None]
    if rule.for_each == "startup_checks":  # the program's own checks that fail (issue 18)
        from packlint.conditions.functions.startup import startup_items

        return list(startup_items(ctx)) if ctx is not None else []
    if rule.for_each == "stack_keys":  # configuration keys the launch's stack does not define (issue 28)
        from packlint.conditions.functions.stack_config_keys import stack_key_items

        return stack_key_items(ctx) if ctx is not None else []
    if rule.for_each == "flags":
        return sorted(variant.get("flags", {}))
    if rule.for_each == "env":
        return sorted(variant.get("env", {}))
    return list(rule.for_each_items)


def _eval(expr: Expr, ctx: EvalContext) -> Any:
    try:
        return expr.eval(ctx)
    except RecursionError:  # pragma: no cover - a pathological table
        return Unk("the condition is too deeply nested", "invalid")


def code_version(model: ScriptModelJSON, launch: LaunchJSON) -> str | None:
    """The version of the code a launch runs, where the model knows it (a code-base reader or a
    snapshot fills `code_version`); None until then, and every rule applies."""
    return launch.get("code_version") or model.get("code_version")


def stack_version_of(launch: LaunchJSON, stack: str) -> str | None:
    """The version of `stack` for a launch: the launch's own stack version when it runs that stack,
    else the distribution installed here (packlint.configs.versions); None when unknown."""
    cfg = launch_config(launch)
    if cfg and cfg.get("stack") == stack:
        return (cfg.get("stack_version") or {}).get("value")
    from packlint.configs import table
    from packlint.configs.versions import stack_version

    dist = next((e.get("dist") for e in table()["program"] if e["stack"] == stack), None)
    return stack_version(stack, dist, None, None).get("value")


def _version_gate(rule: Rule, model: ScriptModelJSON, launch: LaunchJSON) -> tuple[bool, str]:
    """(applies, message suffix): a rule outside its `versions` range says nothing; a stack version
    that is unknown keeps the rule, and its messages say what was assumed."""
    versions = getattr(rule, "versions", None)
    if not versions:
        return True, ""
    stack, constraints = parse_versions(versions)
    if stack == "core":
        return version_applies(versions, code_version(model, launch)), ""
    have = stack_version_of(launch, stack)
    if have is None or version_in_range(constraints, have) is None:
        return True, f" (assumed {versions}: the installed version is unknown)"
    return bool(version_in_range(constraints, have)), ""


def _with_suffix(findings: list[Finding], suffix: str) -> list[Finding]:
    return [
        Finding(
            f.code, f.name, f.severity, f.message + suffix, f.location, f.related, f.certainty, f.when, f.help, f.fix
        )
        for f in findings
    ]


def _run_launch_rule(
    model: ScriptModelJSON,
    launch: LaunchJSON,
    rule: Rule,
    code: CodeFn | None = None,
    contexts: list[EvalContext] | None = None,
    launch_loc: Location | None = None,
) -> list[Finding]:
    applies, suffix = _version_gate(rule, model, launch)
    if not applies:
        return []
    if suffix:
        return _with_suffix(_run_launch_rule_in_range(model, launch, rule, code, contexts, launch_loc), suffix)
    return _run_launch_rule_in_range(model, launch, rule, code, contexts, launch_loc)


def _run_launch_rule_in_range(
    model: ScriptModelJSON,
    launch: LaunchJSON,
    rule: Rule,
    code: CodeFn | None = None,
    contexts: list[EvalContext] | None = None,
    launch_loc: Location | None = None,
) -> list[Finding]:
    launch_variants = variants(launch)
    if contexts is None:
        contexts = [EvalContext(model, launch, v, code=code) for v in launch_variants]
    if launch_loc is None:
        launch_loc = Location.from_json(launch) or _script_location(model)
    hits, fired_items, undecided = _evaluate(rule, launch_variants, contexts, launch_loc)
    if not hits and not undecided:
        return []
    out = _merged_hits(rule, hits, launch_variants, list(launch.get("when") or []))
    if out:
        from packlint.conditions.shipped import mark_as_shipped

        out = mark_as_shipped(out, rule.when, launch)  # issue 27: `"$@"` passes the caller's overrides on
    for item, unks in undecided.items():
        if item not in fired_items:
            ctx = EvalContext(model, launch, launch_variants[0], code=code)
            out.append(_undecided_finding(rule, item, unks, ctx, launch_loc))
    return out


def _evaluate(
    rule: Rule, variants: list[VariantJSON], contexts: list[EvalContext], launch_loc: Location
) -> tuple[dict[tuple[Any, Location], list[_Hit]], set[Any], dict[Any, list[Unk]]]:
    """The rule's condition in every variant for every item: (item, location) -> hits, the items that
    fired, item -> the undecided results (kept when the rule reports undecided cases)."""
    hits: dict[tuple[Any, Location], list[_Hit]] = {}
    fired_items: set[Any] = set()
    undecided: dict[Any, list[Unk]] = {}
    guards = _item_guards(rule)
    only_true = _conjuncts(rule)
    for vi, variant in enumerate(variants):
        ctx = contexts[vi]
        if guards:
            ctx.bindings = {}
            if (
                any(_eval(g, ctx) is False for g in guards)
                if only_true is None
                else any(_eval(g, ctx) is not True for g in guards)
            ):
                continue  # false (or, where only a true result counts, not true) for every item
        for item in _items(rule, variant, ctx):
            ctx.bindings = {} if item is None else {"name": item}
            result = _eval(rule.when, ctx)
            if result is True:
                hit = _hit(rule, ctx, vi, launch_loc)
                hits.setdefault((item, hit.location), []).append(hit)
                fired_items.add(item)
            elif isinstance(result, Unk) and result.kind == "unknown" and rule.undecided == "info":
                undecided.setdefault(item, []).append(result)
    return hits, fired_items, undecided


def _merged_hits(
    rule: Rule, hits: dict[tuple[Any, Location], list[_Hit]], variants: list[VariantJSON], shared: list[str]
) -> list[Finding]:
    """One finding per (item, location): certain when it fired in every variant, else possible, with
    the branch decisions that make it fire."""
    out = []
    for (_item, location), group in hits.items():
        first = group[0]
        fired_in = {h.variant for h in group}
        if len(fired_in) == len(variants):
            certainty, when = "certain", []
        else:
            certainty = "possible"
            when = _trigger(variants, fired_in, shared)
        severity = max((h.severity for h in group), key=SEVERITY_RANK.__getitem__)
        message = first.message
        if when:
            message += " (only when " + " or when ".join(when) + ")"
        out.append(
            Finding(
                rule.code,
                rule.name,
                severity,
                message,
                location,
                first.related,
                certainty,
                tuple(when),
                first.help,
                first.fix,
            )
        )
    return out


def _undecided_finding(rule: Rule, item: Any, unks: list[Unk], ctx: EvalContext, launch_loc: Location) -> Finding:
    """The info "could not decide" for an item that never fired, with the reasons it stayed open."""
    reasons: list[str] = []
    for u in unks:
        if u.reason not in reasons:
            reasons.append(u.reason)
    where = next((Location.from_json(u.loc) for u in unks if u.loc), None)
    if where is None:
        ctx.bindings = {} if item is None else {"name": item}
        where = _resolve(rule.report_at, ctx, launch_loc) or launch_loc
    subject = f" for {item}" if item is not None else ""
    return Finding(
        rule.code,
        rule.name,
        "info",
        f"could not decide {rule.code} ({rule.name}){subject}: " + "; ".join(reasons),
        where,
        (Related(launch_loc, "the launch this applies to"),) if where != launch_loc else (),
        "possible",
        (),
        None,
    )


def _trigger(variants: list[VariantJSON], fired_in: set[int], shared: list[str]) -> list[str]:
    """The branch decisions that make the difference: shared by every firing variant and missing from
    some other one; else each firing variant's own decisions."""
    extra = {i: [c for c in (variants[i].get("when") or []) if c not in shared] for i in range(len(variants))}
    firing = sorted(fired_in)
    common = [c for c in extra[firing[0]] if all(c in extra[i] for i in firing[1:])]
    others = [i for i in range(len(variants)) if i not in fired_in]
    decisive = [c for c in common if any(c not in extra[i] for i in others)]
    if decisive:
        return [" and ".join(decisive)]
    alts = []
    for i in firing:
        text = " and ".join(extra[i])
        if text and text not in alts:
            alts.append(text)
    return alts


def _hit(rule: Rule, ctx: EvalContext, vi: int, fallback: Location) -> _Hit:
    severity, message, help_t = rule.severity, rule.message, rule.help
    for ov in rule.overrides:
        if _eval(ov.when, ctx) is True:
            severity = ov.severity or severity
            message = ov.message or message
            help_t = ov.help or help_t
            break
    # (a report_at with no location of its own, e.g. a diagnostic's missing related one, falls back)
    location = _resolve(rule.report_at, ctx, fallback) or fallback
    related = []
    for spec, tmpl in rule.related:
        loc = _resolve(spec, ctx, None)
        if loc is not None and loc != location:
            related.append(Related(loc, tmpl.render(ctx)))
    # a finding in a config file: the launch that reads it is where the user looks next
    in_other_file = ctx.launch and location.path != ctx.launch.get("file") == fallback.path
    if in_other_file and all(r.location != fallback for r in related):
        related.append(Related(fallback, "the launch that reads this configuration"))
    return _Hit(
        vi,
        severity,
        message.render(ctx),
        help_t.render(ctx) if help_t else None,
        location,
        tuple(related),
        _fix_plan(rule, ctx, location),
    )


def _setting_name(name: str) -> tuple[str, str]:
    """(section, key) of a `setting:` name: `KEY`, or `deepspeed:KEY` / `accelerate:KEY` / `main:KEY`."""
    section, sep, key = name.partition(":")
    if not sep or section not in ("main", "deepspeed", "accelerate"):
        return "main", name
    return section, key


def _setting_entry(ctx: EvalContext, name: str) -> SettingJSON | None:
    """The merged settings entry of a `setting:` name; for a mapping, its first key's (None: not set)."""
    cfg = variant_config(ctx.variant)
    section, key = _setting_name(name)
    settings = config_settings(cfg, section) if cfg else None
    if not settings:
        return None
    entry = settings.get(key)
    if entry is None:  # a mapping: where its first key was set
        entry = next((e for k, e in settings.items() if k.startswith(key + ".")), None)
    return entry


def _setting_location(ctx: EvalContext, name: str) -> Location | None:
    """Where a configuration key's merged value was set (`setting:KEY`, `setting:deepspeed:KEY`)."""
    entry = _setting_entry(ctx, name)
    return Location.from_json(entry) if entry else None


def _fix_plan(rule: Rule, ctx: EvalContext, location: Location) -> FixPlan | None:
    """The rule's fix on this hit: its span resolved like report_at (no span, no fix)."""
    spec = rule.fix
    if spec is None or (spec.when is not None and _eval(spec.when, ctx) is not True):
        return None
    start = _resolve(spec.at, ctx, None) if spec.at is not None else location
    if start is None:
        return None
    end = _resolve(spec.to, ctx, None) if spec.to is not None else None
    if end is None or end.path != start.path or (end.end_line, end.end_column) < (start.line, start.column):
        end = start
    plan = FixPlan(
        spec.kind,
        start,
        end,
        spec.text.render(ctx) if spec.text is not None else "",
        spec.applicability,
        spec.title.render(ctx),
        spec.expect.render(ctx) if spec.expect is not None else None,
        getattr(spec, "refuse_if_read", True),
    )
    if spec.kind in ("set_key", "replace_value", "delete_key"):
        return _config_fix_plan(spec, ctx, plan, spec.at if spec.at is not None else rule.report_at)
    return plan


def _config_fix_plan(spec: FixSpec, ctx: EvalContext, plan: FixPlan, at: LocationSpec | None) -> FixPlan:
    """A config-file fix (docs/fixes.md): the file it edits must be one the launch names (not a Hydra
    default, not an inherited parent), and the value must be set there (not by the command line);
    otherwise the plan carries why no fix is offered."""
    key_t, value_t = getattr(spec, "key", None), getattr(spec, "value", None)  # (a table cached before them)
    key = key_t.render(ctx) if key_t is not None else None
    value = value_t.render(ctx) if value_t is not None else None
    cfg = variant_config(ctx.variant)
    files = config_files(cfg)
    path = plan.start.path
    record = next((f for f in files if f.get("file") == path), None)
    refused = None
    fmt = dialect = None
    launch_file = ctx.launch.get("file")
    at_entry = _at_setting(ctx, at)
    if record is None and spec.kind == "set_key" and at_entry is None:
        # the reported setting is the stack's default (written nowhere): the key goes into the main file
        main = next((f for f in files if f.get("role") == "main" and f.get("file")), None)
        if main is not None:
            record, path = main, str(main["file"])
            plan = FixPlan(plan.kind, Location(path, 0, 0, 0, 0), Location(path, 0, 0, 0, 0), "", plan.applicability,
                           plan.title, plan.expect, plan.refuse_if_read)  # fmt: skip
    if record is None and at is not None and at.kind == "setting" and at_entry is None:
        refused = "the setting is not written anywhere (the stack's default applies): nothing to edit"
    elif record is None:
        if path == launch_file and spec.kind == "replace_value" and value is not None:
            # the value comes from the command line (`--key 4`, `key=4`): replace that word in the script
            # (a script fix, checked with `bash -n`; only when the word still holds the merged value)
            fallback = _replace_on_command_line(ctx, at, plan, value)
            if fallback is not None:
                return fallback
        if path == launch_file:
            refused = "the value is set on the command line (an override), not in a config file: change it there"
        else:
            refused = (
                f"{path} is pulled in by another config file (a Hydra default or an inherited `defaults:`),"
                " not named by the launch: not edited"
            )
    elif record.get("role") == "defaults" or _hydra_stack(config_stack(cfg)):
        refused = f"{path} is composed by Hydra (`defaults:`, packages): its keys are not edited by fixes"
    else:
        fmt = record.get("format") or "yaml"
        dialect = "json" if fmt == "json" else _stack_dialect(config_stack(cfg), record.get("role"))
        if fmt not in ("yaml", "json"):
            refused = f"{fmt.upper()} files are not edited by fixes"
    if refused is None and key is not None:
        # set_key: a later source (the command line) that sets the key would win over the file's value
        section = _section_of(cfg, path)
        settings = config_settings(cfg, section) if cfg else None
        entry = (settings or {}).get(key)
        if entry is not None and entry.get("source") not in (None, "file"):
            where = f"{entry.get('file')}:{entry.get('line')}"
            refused = f"{key} is set on the command line ({where}): the file's value would not reach the run"
        elif entry is not None and entry.get("file") not in (None, path):
            refused = f"{key} is set in {entry.get('file')}:{entry.get('line')}, which wins over {path}"
    return FixPlan(
        plan.kind,
        plan.start,
        plan.end,
        "",
        plan.applicability,
        plan.title,
        plan.expect,
        plan.refuse_if_read,
        key,
        value,
        fmt,
        dialect,
        refused,
    )


def _at_setting(ctx: EvalContext, at: LocationSpec | None) -> SettingJSON | None:
    """The merged settings entry a `setting:[SECTION:]KEY` location spec names (None: not set)."""
    if at is None or at.kind != "setting" or at.name is None:
        return None
    return _setting_entry(ctx, at.name.render(ctx))


def _replace_on_command_line(ctx: EvalContext, at: LocationSpec | None, plan: FixPlan, value: str) -> FixPlan | None:
    """A replace_value whose setting was given on the command line: a plain `replace` of the value word."""
    name = at.name.render(ctx) if at is not None and at.name is not None else None
    if at is None or at.kind != "setting" or name is None:
        return None
    cfg = variant_config(ctx.variant)
    section, key = _setting_name(name)
    if section != "main":
        return None
    entry = ((config_settings(cfg) if cfg else None) or {}).get(key)
    old = entry.get("value") if entry else None
    if isinstance(old, bool) or not isinstance(old, (str, int)):
        return None
    from packlint.configfix import Refused, _typed, _yaml_scalar

    try:
        text = _yaml_scalar(_typed(value, "pyyaml"), value, "pyyaml", None)
    except Refused:
        return None
    if text.startswith('"'):
        return None
    start, expect = plan.start, str(old)
    if start.line == start.end_line and start.end_column - start.column > len(expect):
        # `key=4` (an override word): the value is its tail; the script fix checks the text is there
        start = Location(start.path, start.line, start.end_column - len(expect), start.end_line, start.end_column)
    return FixPlan("replace", start, start, text, plan.applicability, plan.title, expect, True)


def _section_of(cfg: ConfigJSON | None, path: str) -> str:
    """The settings section a config file's values went into (main, deepspeed, accelerate)."""
    record = next((f for f in config_files(cfg) if f.get("file") == path), None)
    role = (record or {}).get("role") or "main"
    return role if role in ("deepspeed", "accelerate") else "main"


def _hydra_stack(stack: str | None) -> bool:
    from packlint.configs import table

    return any(e.get("stack") == stack and (e.get("file") or {}).get("hydra") for e in table()["program"])


def _stack_dialect(stack: str | None, role: str | None) -> str:
    """The YAML dialect a stack reads its files with (packlint/configs/stacks.toml `yaml`)."""
    if role == "accelerate":
        return "pyyaml"
    from packlint.configs import table

    for entry in table()["program"]:
        if entry.get("stack") == stack and entry.get("yaml"):
            return str(entry["yaml"])
    return "pyyaml"


def _resolve(spec: LocationSpec, ctx: EvalContext, fallback: Location | None) -> Location | None:
    name = spec.name.render(ctx) if spec.name is not None else None
    v = ctx.variant
    loc = None
    if spec.kind == "launch":
        loc = Location.from_json(ctx.launch)
    elif spec.kind == "diagnostic":
        item = getattr(ctx, "item", None) or as_diagnostic({})
        if spec.part == "related":
            related = item.get("related") or []
            loc = Location.from_json(related[0]) if related else None
            return loc  # no related location: nothing to point at (no fallback)
        loc = Location.from_json(item)
    elif spec.kind in ("env", "var"):
        tables = (v.get("env", {}), v.get("unexported", {}))
        if spec.kind == "var":
            tables = tables[::-1]
        entry = next((t.get(name or "") for t in tables if t.get(name or "")), None)
        if entry is not None:
            if spec.part == "value":
                loc = Location.from_json(entry.get("value_location"))
            loc = loc or Location.from_json(entry)
    elif spec.kind == "setting":
        loc = _setting_location(ctx, name or "")
    elif spec.kind == "config_file":
        bad = next((f for f in config_files(variant_config(v)) if f.get("missing") or f.get("error")), None)
        if bad is not None:
            loc = Location.from_json(bad.get("named_at")) if bad.get("missing") else None
            loc = loc or Location.from_json(bad.get("error_at")) or Location.from_json(bad.get("named_at"))
    elif spec.kind == "exported_after":
        loc = Location.from_json(v.get("exported_after", {}).get(name or ""))
    elif spec.kind in ("flag", "launcher_flag"):
        occ = [o for o in flag_occurrences(v, "flags" if spec.kind == "flag" else "launcher_flags", name or "") if o]
        if occ:
            o = occ[0] if spec.part.startswith("first") else occ[-1]
            if spec.part.endswith("value"):
                loc = Location.from_json(o.get("value_location"))
            loc = loc or Location.from_json(o)
    return loc or fallback
