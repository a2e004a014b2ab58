"""`--format json`: one document for the whole run (documented in docs/check.md)."""

from __future__ import annotations

import json

from packlint.findings import Finding, Summary

JSON_VERSION = 1


def render(findings: list[Finding], summary: Summary, **_: object) -> str:
    doc = {"version": JSON_VERSION, "findings": [f.to_json() for f in findings], "summary": summary.to_json()}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
