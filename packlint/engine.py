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

from packlint import evidence
from packlint.conditions import EvalContext, Expr, Unk
from packlint.conditions.settle import OPAQUE, costly, settle
from packlint.conditions.tree import And, PredicateCall, Var
from packlint.engine_report import _eval, _Hit, _hit, _resolve
from packlint.engine_script import (
    MAX_RELATED_PER_MESSAGE,
    _apply_suppressions,
    _BashCheck,
    _run_script_rule,
    _script_location,
    decode_script,
    group_findings,
)
from packlint.findings import SEVERITY_RANK, Finding, Location, Related
from packlint.model_view import as_model, diagnostics, launch_config, launches, variants
from packlint.rule_table import Rule, RuleTable, parse_versions, version_applies, version_in_range

if TYPE_CHECKING:
    from packlint.model_types import LaunchJSON, ScriptModelJSON, VariantJSON

    # (launch, variant) -> packlint.codebase.CodeFacts | None: the facts about the code a launch runs
    CodeFn = Callable[[LaunchJSON, VariantJSON], Any]

# (names other modules and tests import from here)
__all__ = [
    "MAX_RELATED_PER_MESSAGE",
    "_BashCheck",
    "_cannot_fire",
    "_eval",
    "_head",
    "check_model",
    "check_model_detailed",
    "decode_script",
    "group_findings",
    "select_rules",
    "unknown_selectors",
    "unknown_selectors_message",
]


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
                # most rules are false for most launches: settle that without building anything (a first term
                # of the launch model shared by rules, then _cannot_fire: the launch model before the code)
                if rule.for_each is None and (head := _head(rule)) is not None:
                    dead = dead_heads.get(head[0])
                    if dead is None and not _costly_head(rule):
                        dead = dead_heads[head[0]] = all(_eval(head[1], c) is not True for c in contexts)
                    elif dead is None and all(_known_not_true(head[0], c) for c in contexts):
                        dead = dead_heads[head[0]] = True  # (a costly head an earlier rule settled or evaluated)
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
    effects besides memos, so stopping early, and asking the terms in any order, change nothing but the
    time: the terms that read only the launch model first, then what their cheap parts settle of the others
    (packlint.conditions.settle: a settled value is the value), and only then the costly parts themselves
    (the launched code, config files). What this reads is no premise of a finding: the engine evaluates a
    rule that may fire again, its premises cleared."""
    plan = _plan(rule)
    if plan is None:
        if _costly(rule):
            v = settle(rule.when, ctx)
            if v is not OPAQUE:
                return v is False
        return _eval(rule.when, ctx) is False
    cheap, costly_terms = plan
    for t in cheap:  # noqa: SIM110 (a loop: no generator frame per rule and launch)
        if _eval(t, ctx) is not True:
            return True
    if not costly_terms:
        return False
    unsettled = []
    for t in costly_terms:
        v = settle(t, ctx)
        if v is OPAQUE:
            unsettled.append(t)
        elif v is not True:
            return True
    for t in unsettled:  # noqa: SIM110
        if _eval(t, ctx) is not True:
            return True
    return False


def _plan(rule: Rule) -> tuple[tuple[Expr, ...], tuple[Expr, ...]] | None:
    """The rule's `_conjuncts` as (those that read only the launch model, the others), each in the rule's
    order, kept on the rule; None for a rule that also reports undecided results."""
    plan = rule.__dict__.get("_plan", _UNSET)
    if plan is _UNSET:
        terms = _conjuncts(rule)
        plan = (
            None if terms is None else (tuple(t for t in terms if not costly(t)), tuple(t for t in terms if costly(t)))
        )
        rule.__dict__["_plan"] = plan
    return plan


def _costly(rule: Rule) -> bool:
    """Whether the rule's condition reads more than the launch model (kept on the rule)."""
    found = rule.__dict__.get("_costly")
    if found is None:
        found = rule.__dict__["_costly"] = costly(rule.when)
    return found


def _known_not_true(name: str, ctx: EvalContext) -> bool:
    """The predicate `name` (no parameters) is known in this context, evaluated or settled by an earlier rule's
    `_cannot_fire` (its memo), and not true: every rule it heads is settled without asking anything again."""
    memo = ctx.memo
    value = memo.get(("predicate", name), _UNSET)
    if value is _UNSET:
        value = memo.get(("settled", name), OPAQUE)
    return value is not OPAQUE and value is not True


def _costly_head(rule: Rule) -> bool:
    """Whether the rule's shared first term (`_head`) reads more than the launch model (kept on the rule): such
    a head is settled by `_cannot_fire`, after the rule's cheap terms."""
    found = rule.__dict__.get("_costly_head")
    if found is None:
        head = _head(rule)
        found = rule.__dict__["_costly_head"] = head is not None and costly(head[1])
    return found


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


def _version_gate(rule: Rule, model: ScriptModelJSON, launch: LaunchJSON) -> tuple[bool, tuple[evidence.Premise, ...]]:
    """(applies, premises): a rule outside its `versions` range says nothing; a stack version that is
    unknown keeps the rule on an assumption (the range), which its findings name and are capped by."""
    versions = getattr(rule, "versions", None)
    if not versions:
        return True, ()
    stack, constraints = parse_versions(versions)
    if stack == "core":
        return version_applies(versions, code_version(model, launch)), ()
    have = stack_version_of(launch, stack)
    if have is None or version_in_range(constraints, have) is None:
        return True, ((evidence.ASSUMED, f"{versions}: the installed version is unknown"),)
    return bool(version_in_range(constraints, have)), ()


def _run_launch_rule(
    model: ScriptModelJSON,
    launch: LaunchJSON,
    rule: Rule,
    code: CodeFn | None = None,
    contexts: list[EvalContext] | None = None,
    launch_loc: Location | None = None,
) -> list[Finding]:
    applies, assumed = _version_gate(rule, model, launch)
    if not applies:
        return []
    return _run_launch_rule_in_range(model, launch, rule, code, contexts, launch_loc, assumed)


def _run_launch_rule_in_range(
    model: ScriptModelJSON,
    launch: LaunchJSON,
    rule: Rule,
    code: CodeFn | None = None,
    contexts: list[EvalContext] | None = None,
    launch_loc: Location | None = None,
    assumed: tuple[evidence.Premise, ...] = (),
) -> list[Finding]:
    launch_variants = variants(launch)
    if contexts is None:
        contexts = [EvalContext(model, launch, v, code=code) for v in launch_variants]
    if launch_loc is None:
        launch_loc = Location.from_json(launch) or _script_location(model)
    hits, fired_items, undecided = _evaluate(rule, launch_variants, contexts, launch_loc)
    if not hits and not undecided:
        return []
    out = _merged_hits(rule, hits, launch_variants, list(launch.get("when") or []), assumed)
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
            ctx.premises.clear()  # (what this evaluation reads besides the checkout: packlint.evidence)
            result = _eval(rule.when, ctx)
            if result is True:
                hit = _hit(rule, ctx, vi, launch_loc)
                hits.setdefault((item, hit.location), []).append(hit)
                fired_items.add(item)
            elif isinstance(result, Unk) and result.kind == "unknown" and rule.undecided == "info":
                undecided.setdefault(item, []).append(result)
    return hits, fired_items, undecided


def _merged_hits(
    rule: Rule,
    hits: dict[tuple[Any, Location], list[_Hit]],
    variants: list[VariantJSON],
    shared: list[str],
    assumed: tuple[evidence.Premise, ...] = (),
) -> list[Finding]:
    """One finding per (item, location): certain when it fired in every variant, else possible, with
    the branch decisions that make it fire; capped by the premises it read in any variant (and the
    rule's own `assumed` ones: a stack version taken from the rule's range), packlint.evidence."""
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
        premises = evidence.unique([*assumed, *(p for h in group for p in h.premises), *_machine_decisions(when)])
        message = first.message + evidence.suffix(premises)
        if when:
            message += " (only when " + " or when ".join(when) + ")"
        out.append(
            Finding(
                rule.code,
                rule.name,
                evidence.cap(severity, premises),
                message,
                location,
                first.related,
                certainty,
                tuple(when),
                first.help,
                first.fix,
                evidence.basis(premises),
                premises,
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


def _machine_decisions(when: list[str]) -> list[evidence.Premise]:
    """The machine premises of a finding that holds only under some branch decisions: one for each alternative
    when every alternative takes a decision that tests the machine (a PATH lookup, a device tool, an absolute
    path), none otherwise."""
    found: list[evidence.Premise] = []
    for alternative in when:
        premise = next(
            (p for d in alternative.split(" and ") if (p := evidence.condition_premise(d)) is not None), None
        )
        if premise is None:
            return []
        found.append(premise)
    return found


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
