"""`--output-format junit`: JUnit XML, the test-report format Jenkins, GitLab, Azure Pipelines, CircleCI
and Buildkite read natively (the Ant/Jenkins shape: `testsuites > testsuite > testcase > failure`).

One `testsuite` per checked file (name: the path relative to the repository root); one `testcase` per
finding (classname: the path, name: `CODE rule-name at line:col`). A finding that fails the run (at or
above its file's --fail-on) is a `failure` (type: the severity, message: the message, text: location,
notes and help); one below it is a passing test case whose `system-out` holds the message, so CI lists it
without going red. A file without findings is one passing test case `packlint`. A file packlint could not
check is an `error` test case. Validated against the Jenkins JUnit schema in tests/.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packlint.checking import CheckResult
    from packlint.findings import Finding

from xml.sax.saxutils import escape, quoteattr

from packlint.findings import SEVERITY_RANK
from packlint.reporters.escape import utf8_safe


def _xml_text(text: str) -> str:
    """XML 1.0 allows no control characters besides tab, newline and carriage return."""
    return escape("".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "\ufffd" for c in utf8_safe(text)))


def _attr(text: str) -> str:
    return quoteattr("".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "\ufffd" for c in utf8_safe(text)))


def _details(f: Finding) -> str:
    loc = f.location
    lines = [f"{loc.path}:{loc.line}:{loc.column}: {f.code} [{f.severity}] {f.message}"]
    lines += [f"note: {r.location.path}:{r.location.line}:{r.location.column}: {r.message}" for r in f.related]
    if f.help:
        lines.append(f"help: {f.help}")
    return "\n".join(lines)


def render(result: CheckResult, **_: object) -> str:
    from packlint.baseline import relative_path

    suites: dict[str, list[str]] = {}
    counts: dict[str, list[int]] = {}

    def suite(path: str) -> list[str]:
        counts.setdefault(path, [0, 0, 0])
        return suites.setdefault(path, [])

    for path in result.checked_paths if hasattr(result, "checked_paths") else []:
        suite(relative_path(path, result.root))
    thresholds = result.thresholds or [SEVERITY_RANK["error"]] * len(result.findings)
    for f, threshold in zip(result.findings, thresholds, strict=False):
        path = relative_path(f.location.path, result.root)
        cases = suite(path)
        name = f"{f.code} {f.name} at {f.location.line}:{f.location.column}"
        head = f'    <testcase classname={_attr(path)} name={_attr(name)} time="0">'
        counts[path][0] += 1
        if SEVERITY_RANK[f.severity] >= threshold:
            counts[path][1] += 1
            cases.append(
                f"{head}\n      <failure type={_attr(f.severity)} message={_attr(f.message)}>"
                f"{_xml_text(_details(f))}</failure>\n    </testcase>"
            )
        else:
            cases.append(f"{head}\n      <system-out>{_xml_text(_details(f))}</system-out>\n    </testcase>")
    for e in result.file_errors:
        path = relative_path(e.path, result.root) if e.path else "packlint"
        cases = suite(path)
        counts[path][0] += 1
        counts[path][2] += 1
        cases.append(
            f'    <testcase classname={_attr(path)} name="packlint" time="0">\n'
            f"      <error type={_attr(e.kind)} message={_attr(e.message)}>{_xml_text(e.line())}</error>\n"
            f"    </testcase>"
        )
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    out.append(f'<testsuites name="packlint" tests="{total[0]}" failures="{total[1]}" errors="{total[2]}" time="0">')
    for path, cases in suites.items():
        tests, failures, errors = counts[path]
        if not cases:
            cases = [f'    <testcase classname={_attr(path)} name="packlint" time="0"/>']
            tests = 1
        out.append(
            f'  <testsuite name={_attr(path)} tests="{tests}" failures="{failures}" '
            f'errors="{errors}" skipped="0" time="0">'
        )
        out.extend(cases)
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
