"""`--format sarif`: one SARIF 2.1.0 log (validated against the official schema by the test suite).

- `tool.driver`: name, version, informationUri and every loaded rule (`rules[]`: id, name, short and
  full description, help from the rule's explanation, defaultConfiguration.level).
- each result: ruleId/ruleIndex, level (error | warning | note), message, the primary location
  (artifactLocation relative to the repository root via `%SRCROOT%`, region with start/end line and
  column; columns count Unicode code points: `columnKind`), relatedLocations, `partialFingerprints`
  (`packlint/v1`: path, code, normalised line text, occurrence; survives line shifts) and
  properties (certainty, when, help, evidence and premises: packlint.evidence); `fixes` (artifactChanges
  with replacements) when the finding
  has a fix, the rule's applicability in its description; rules carry `helpUri` (config `doc-url`).
- `invocations[0]`: executionSuccessful is false when a file could not be checked or packlint failed;
  each such problem is a `toolExecutionNotifications` entry. The log is valid even then.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from packlint import __version__
from packlint.baseline import FINGERPRINT_KEY

if TYPE_CHECKING:
    from packlint.checking import CheckResult
    from packlint.findings import Location
    from packlint.fixes import Fix
    from packlint.rule_table import Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/packlint/packlint"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SRCROOT = "%SRCROOT%"


def _artifact(path: str, root: Path) -> dict[str, Any]:
    from packlint.baseline import relative_path

    rel = relative_path(path, root)
    if rel.startswith("/"):
        return {"uri": "file://" + quote(os.fsencode(rel), safe="/")}
    # (the name's bytes, percent-encoded: an undecodable byte is %FF, never an encoding error, H28)
    return {"uri": quote(os.fsencode(rel), safe="/"), "uriBaseId": SRCROOT}


def _region(loc: Location) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": loc.line, "startColumn": loc.column}
    end_line = max(loc.end_line, loc.line)
    region["endLine"] = end_line
    end_col = loc.end_column
    if end_line == loc.line and end_col < loc.column:
        end_col = loc.column
    region["endColumn"] = max(1, end_col)
    return region


def _physical(loc: Location, root: Path) -> dict[str, Any]:
    return {"artifactLocation": _artifact(loc.path, root), "region": _region(loc)}


def _first_paragraph(text: str) -> str:
    para = text.strip().split("\n\n", 1)[0]
    return " ".join(para.split())


def _fix(fix: Fix, root: Path, lines: Any) -> dict[str, Any]:
    """A SARIF `fix`: one artifactChange per file, a replacement per edit (deletedRegion + insertedContent).
    An insertion is an empty region (startColumn == endColumn)."""
    changes: dict[str, dict[str, Any]] = {}
    for e in fix.edits:
        change = changes.setdefault(e.path, {"artifactLocation": _artifact(e.path, root), "replacements": []})
        region = {"startLine": e.line, "startColumn": e.column, "endLine": e.end_line, "endColumn": e.end_column}
        rep: dict[str, Any] = {"deletedRegion": region}
        if e.content:
            rep["insertedContent"] = {"text": e.content}
        change["replacements"].append(rep)
    return {
        "description": {"text": f"{fix.title} ({fix.applicability} fix)"},
        "artifactChanges": list(changes.values()),
    }


def rule_descriptor(rule: Rule, help_uri: str | None = None) -> dict[str, Any]:
    explanation = (rule.explanation or rule.summary).strip()
    d: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _first_paragraph(explanation) or rule.summary},
        "help": {"text": explanation, "markdown": explanation},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": ["packlint", "builtin" if rule.builtin else "user-rule"]},
    }
    if help_uri and rule.builtin:
        d["helpUri"] = help_uri
    return d


def build(result: CheckResult) -> dict[str, Any]:
    rules = [result.rules[c] for c in sorted(result.rules)]
    index = {r.code: i for i, r in enumerate(rules)}
    results = []
    fixes = result.fixes
    for i, (f, fp) in enumerate(zip(result.findings, result.fingerprints or [""] * len(result.findings), strict=False)):
        res: dict[str, Any] = {
            "ruleId": f.code,
            "level": LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": _physical(f.location, result.root)}],
        }
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        if f.related:
            res["relatedLocations"] = [
                {"id": i + 1, "physicalLocation": _physical(r.location, result.root), "message": {"text": r.message}}
                for i, r in enumerate(f.related)
            ]
        if fp:
            res["partialFingerprints"] = {FINGERPRINT_KEY: fp}
        if fixes[i] is not None:
            res["fixes"] = [_fix(fixes[i], result.root, result.sources.lines)]
        props: dict[str, Any] = {"certainty": f.certainty}
        if f.when:
            props["when"] = list(f.when)
        if f.help:
            props["help"] = f.help
        # what the finding stands on (packlint.evidence): checkout | assumed | machine, and the premises
        props["evidence"] = f.evidence
        if f.premises:
            props["premises"] = [{"kind": k, "because": b} for k, b in f.premises]
        res["properties"] = props
        results.append(res)
    notifications = []
    for e in result.file_errors:
        n: dict[str, object] = {
            "level": "error",
            "message": {"text": e.message},
            "descriptor": {"id": "packlint-internal-error" if e.kind == "internal" else "packlint-error"},
        }
        if e.path:
            n["locations"] = [{"physicalLocation": {"artifactLocation": _artifact(e.path, result.root)}}]
        notifications.append(n)
    invocation: dict[str, object] = {"executionSuccessful": not result.file_errors}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    s = result.summary
    run = {
        "tool": {
            "driver": {
                "name": "packlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(r, result.doc_url_for(r.code)) for r in rules],
            }
        },
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": result.root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"summary": s.to_json()},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(result: CheckResult, **_: object) -> str:
    from packlint.reporters.escape import json_safe

    return json_safe(json.dumps(build(result), indent=2, ensure_ascii=False)) + "\n"
