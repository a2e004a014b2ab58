"""`--output-format gitlab`: a GitLab Code Quality report (`artifacts: reports: codequality`), the JSON
array of Code Climate issues GitLab reads: description, check_name, fingerprint, severity, location
(path relative to the repository root, lines.begin/end). Validated against the schema in tests/.

Severity: error -> major, warning -> minor, info -> info (GitLab's scale is info, minor, major, critical,
blocker; `critical`/`blocker` are left for files packlint could not check). The fingerprint is the
finding's stable fingerprint (the one baselines use), hashed: it survives line shifts, so GitLab's
merge-request widget shows only new findings as new.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packlint.checking import CheckResult

import hashlib
import json

SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def render(result: CheckResult, **_: object) -> str:
    from packlint.baseline import relative_path

    issues = []
    seen: set[str] = set()
    for f, fp in zip(result.findings, result.fingerprints or [""] * len(result.findings), strict=False):
        loc = f.location
        basis = fp or f"{loc.path}:{loc.line}:{loc.column}:{f.code}:{f.message}"
        digest = hashlib.md5(basis.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()
        while digest in seen:  # GitLab needs them unique
            digest = hashlib.md5((digest + basis).encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()
        seen.add(digest)
        issue = {
            "type": "issue",
            "check_name": f.code,
            "description": f"{f.code} {f.message}",
            "content": {
                "body": f"`{f.code}` {f.name}"
                + (f"\n\nhelp: {f.help}" if f.help else "")
                + (f"\n\n{result.doc_url_for(f.code)}" if result.doc_url_for(f.code) else "")
            },
            "categories": ["Bug Risk"] if f.severity != "info" else ["Clarity"],
            "fingerprint": digest,
            "severity": SEVERITY[f.severity],
            "location": {
                "path": relative_path(loc.path, result.root),
                "lines": {"begin": loc.line, "end": max(loc.line, loc.end_line)},
            },
        }
        issues.append(issue)
    for e in result.file_errors:
        basis = f"packlint-error:{e.path}:{e.message}"
        issues.append(
            {
                "type": "issue",
                "check_name": "packlint-internal-error" if e.kind == "internal" else "packlint-error",
                "description": e.line(),
                "categories": ["Bug Risk"],
                "fingerprint": hashlib.md5(basis.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest(),
                "severity": "critical",
                "location": {"path": relative_path(e.path, result.root) if e.path else ".", "lines": {"begin": 1}},
            }
        )
    from packlint.reporters.escape import json_safe

    return json_safe(json.dumps(issues, indent=2, ensure_ascii=False)) + "\n"
