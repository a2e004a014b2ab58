"""What a rule reports where its condition holds: the message, the location its `report_at` names,
the related notes, the fix plan, and the severity its premises allow (packlint.evidence).

Split from packlint.engine (which evaluates conditions and merges variants); the engine and the
script-rule runner (packlint.engine_script) both build their hits here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packlint import evidence
from packlint.conditions import EvalContext, Expr, Unk
from packlint.findings import Finding, FixPlan, Location, Related
from packlint.model_view import (
    as_diagnostic,
    config_files,
    config_settings,
    config_stack,
    flag_occurrences,
    variant_config,
)

if TYPE_CHECKING:
    from packlint.model_types import ConfigJSON, SettingJSON
    from packlint.rule_table import FixSpec, LocationSpec, Rule


class _Hit:
    __slots__ = ("variant", "severity", "message", "help", "location", "related", "fix", "premises")

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
        self.premises: tuple[evidence.Premise, ...] = ()  # what the condition read besides the checkout


def _eval(expr: Expr, ctx: EvalContext) -> Any:
    try:
        return expr.eval(ctx)
    except RecursionError:  # pragma: no cover - a pathological table
        return Unk("the condition is too deeply nested", "invalid")


def _hit(rule: Rule, ctx: EvalContext, vi: int, fallback: Location) -> _Hit:
    severity, message, help_t = rule.severity, rule.message, rule.help
    for ov in rule.overrides:
        if _eval(ov.when, ctx) is True:
            severity = ov.severity or severity
            message = ov.message or message
            help_t = ov.help or help_t
            break
    premises = evidence.unique(ctx.premises)  # (before the templates render: they are no premises)
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
    hit = _Hit(
        vi,
        severity,
        message.render(ctx),
        help_t.render(ctx) if help_t else None,
        location,
        tuple(related),
        _fix_plan(rule, ctx, location),
    )
    hit.premises = premises
    return hit


def on_premises(finding: Finding, premises: tuple[evidence.Premise, ...]) -> Finding:
    """A finding as its premises allow it (issue 26): an assumption caps it at warning and its
    message names the assumption; the machine caps it at info. The engine applies this to every
    finding, so no rule decides it for itself."""
    if not premises:
        return finding
    return finding.replace(
        severity=evidence.cap(finding.severity, premises),
        message=finding.message + evidence.suffix(premises),
        evidence=evidence.basis(premises),
        premises=premises,
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
        setting = _setting_entry(ctx, name or "") if spec.part == "key" else None
        key_at = setting.get("key_at") if setting else None
        loc = Location.from_json(key_at) if isinstance(key_at, dict) else _setting_location(ctx, name or "")
    elif spec.kind == "config_file":
        bad = next((f for f in config_files(variant_config(v)) if f.get("missing") or f.get("error")), None)
        if bad is not None:
            loc = Location.from_json(bad.get("named_at")) if bad.get("missing") else None
            loc = loc or Location.from_json(bad.get("error_at")) or Location.from_json(bad.get("named_at"))
    elif spec.kind == "exported_after":
        loc = Location.from_json(v.get("exported_after", {}).get(name or ""))
    elif spec.kind in ("flag", "launcher_flag"):
        table = "flags" if spec.kind == "flag" else "launcher_flags"
        occ = []
        for alias in (name or "").split("|"):  # `flag:--a.b|--a_b`: the first spelling the launch gives
            occ = [o for o in flag_occurrences(v, table, alias) if o]
            if occ:
                break
        if occ:
            o = occ[0] if spec.part.startswith("first") else occ[-1]
            k = ctx.memo.get("flag_problem_at", {}).get(name) if spec.part == "problem" else None
            if isinstance(k, int) and 0 <= k < len(occ):  # (flag_problem: the occurrence it judged)
                o = occ[k]
            if spec.part.endswith(("value", "problem")):
                loc = Location.from_json(o.get("value_location"))
            loc = loc or Location.from_json(o)
    return loc or fallback
