"""Script-scope rules (those about the script as a whole or its diagnostics), the grouping of
findings that several launches share, and `# packlint: disable` comments (packlint.suppressions).

Split from packlint.engine, which calls these after evaluating the launch rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packlint.conditions import EvalContext
from packlint.engine_report import _eval, _hit, on_premises
from packlint.findings import SEVERITY_RANK, Finding, Location, Related
from packlint.model_view import as_model, diagnostics

if TYPE_CHECKING:
    from packlint.model_types import DiagnosticJSON, ScriptModelJSON
    from packlint.rule_table import Rule


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
        # the bytes as bash reads them: a CRLF file keeps its CRs (`then\r` is no keyword; the parse asked bash
        # about the same bytes)
        verdict = bash_syntax_check(data)  # (None: no bash to ask)
        return verdict is None or not verdict[0]


# ---------------------------------------------------------------------------------------------- grouping

MAX_RELATED_PER_MESSAGE = 3


def group_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per (code, primary location, message): a setting that reaches several launches is
    reported once, with the launches as related notes (at most MAX_RELATED_PER_MESSAGE per note text,
    then "and N more launches"); certain when any member is certain; the highest severity wins."""
    from packlint import evidence

    groups: dict[tuple[str, Location, str], list[Finding]] = {}
    for f in findings:
        # the same defect found in two variants with different premises (one from the checkout, one on an
        # assumption) is one finding: keyed by the message without the premises' words
        tail = evidence.suffix(f.premises) if f.premises else ""
        base = f.message[: -len(tail)] if tail and f.message.endswith(tail) else f.message
        groups.setdefault((f.code, f.location, base), []).append(f)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda m: -SEVERITY_RANK[m.severity])  # (the strongest claim speaks; stable)
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
                first.evidence,
                first.premises,
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
        ctx.premises.clear()
        if _eval(rule.when, ctx) is True:
            hit = _hit(rule, ctx, 0, Location.from_json(item) or _script_location(model))
            finding = Finding(
                rule.code, rule.name, hit.severity, hit.message, hit.location, hit.related, "certain", (), hit.help,
                hit.fix,
            )  # fmt: skip
            out.append(on_premises(finding, hit.premises))
    return out
