"""`--format json`: one document for the whole run (documented in docs/check.md).

Each finding carries `url` (its rule's documentation, from the `doc-url` template) and `fix`: null, or
`{applicability: safe|unsafe, message, edits: [{path, line, column, end_line, end_column, content}]}`
(1-based, end exclusive, columns in code points; the edits of one fix never overlap).

`errors` lists the files packlint could not check (and run-level errors, with `path: null`); the
document is complete and valid even then."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packlint.checking import CheckResult

import json

JSON_VERSION = 1


def render(result: CheckResult, **_: object) -> str:
    findings = []
    fixes = result.fixes
    prints: list[str] | list[None] = result.fingerprints or [None] * len(result.findings)
    for i, (f, fp) in enumerate(zip(result.findings, prints, strict=False)):
        d = f.to_json()
        if fp:
            d["fingerprint"] = fp
        d["url"] = result.doc_url_for(f.code)
        d["fix"] = fixes[i].to_json() if fixes[i] is not None else None
        findings.append(d)
    doc = {
        "version": JSON_VERSION,
        "findings": findings,
        "summary": result.summary.to_json(),
        "errors": [e.to_json() for e in result.file_errors],
    }
    from packlint.reporters.escape import json_safe

    return json_safe(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"  # (valid UTF-8: H28)
