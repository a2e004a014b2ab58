"""`--format json`: one document for the whole run (documented in docs/check.md).

`errors` lists the files packlint could not check (and run-level errors, with `path: null`); the
document is complete and valid even then."""

from __future__ import annotations

import json

JSON_VERSION = 1


def render(result, **_: object) -> str:
    findings = []
    for f, fp in zip(result.findings, result.fingerprints or [None] * len(result.findings)):
        d = f.to_json()
        if fp:
            d["fingerprint"] = fp
        findings.append(d)
    doc = {"version": JSON_VERSION, "findings": findings, "summary": result.summary.to_json(),
           "errors": [e.to_json() for e in result.file_errors]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
