"""`--format sarif`: one SARIF 2.1.0 log (validated against the official schema by the test suite).

- `tool.driver`: name, version, informationUri and every loaded rule (`rules[]`: id, name, short and
  full description, help from the rule's explanation, defaultConfiguration.level).
- each result: ruleId/ruleIndex, level (error | warning | note), message, the primary location
  (artifactLocation relative to the repository root via `%SRCROOT%`, region with start/end line and
  column; columns count Unicode code points: `columnKind`), relatedLocations, `partialFingerprints`
  (`packlint/v1`: path, code, normalised line text, occurrence; survives line shifts) and
  properties (certainty, when, help).
- `invocations[0]`: executionSuccessful is false when a file could not be checked or packlint failed;
  each such problem is a `toolExecutionNotifications` entry. The log is valid even then.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from packlint import __version__
from packlint.baseline import FINGERPRINT_KEY

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/packlint/packlint"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SRCROOT = "%SRCROOT%"


def _artifact(path: str, root: Path) -> dict:
    from packlint.baseline import relative_path

    rel = relative_path(path, root)
    if rel.startswith("/"):
        return {"uri": Path(rel).as_uri()}
    return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}


def _region(loc) -> dict:
    region = {"startLine": loc.line, "startColumn": loc.column}
    end_line = max(loc.end_line, loc.line)
    region["endLine"] = end_line
    end_col = loc.end_column
    if end_line == loc.line and end_col < loc.column:
        end_col = loc.column
    region["endColumn"] = max(1, end_col)
    return region


def _physical(loc, root: Path) -> dict:
    return {"artifactLocation": _artifact(loc.path, root), "region": _region(loc)}


def _first_paragraph(text: str) -> str:
    para = text.strip().split("\n\n", 1)[0]
    return " ".join(para.split())


def rule_descriptor(rule) -> dict:
    explanation = (rule.explanation or rule.summary).strip()
    d = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _first_paragraph(explanation) or rule.summary},
        "help": {"text": explanation, "markdown": explanation},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": ["packlint", "builtin" if rule.builtin else "user-rule"]},
    }
    return d


def build(result) -> dict:
    rules = [result.rules[c] for c in sorted(result.rules)]
    index = {r.code: i for i, r in enumerate(rules)}
    results = []
    for f, fp in zip(result.findings, result.fingerprints or [""] * len(result.findings)):
        res = {
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
                for i, r in enumerate(f.related)]
        if fp:
            res["partialFingerprints"] = {FINGERPRINT_KEY: fp}
        props = {"certainty": f.certainty}
        if f.when:
            props["when"] = list(f.when)
        if f.help:
            props["help"] = f.help
        res["properties"] = props
        results.append(res)
    notifications = []
    for e in result.file_errors:
        n = {"level": "error", "message": {"text": e.message},
             "descriptor": {"id": "packlint-internal-error" if e.kind == "internal" else "packlint-error"}}
        if e.path:
            n["locations"] = [{"physicalLocation": {"artifactLocation": _artifact(e.path, result.root)}}]
        notifications.append(n)
    invocation = {"executionSuccessful": not result.file_errors}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    s = result.summary
    run = {
        "tool": {"driver": {"name": "packlint", "version": __version__, "semanticVersion": __version__,
                            "informationUri": INFORMATION_URI, "rules": [rule_descriptor(r) for r in rules]}},
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": result.root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"summary": s.to_json()},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(result, **_: object) -> str:
    return json.dumps(build(result), indent=2, ensure_ascii=False) + "\n"
