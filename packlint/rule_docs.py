"""Rule documentation generated from the rule table's own metadata (like ruff's and sqlfluff's rule
pages): one rule for `packlint explain`, the whole table for `packlint rules --format markdown`, which
writes docs/rules-reference.md. The rule's TOML entry is the only place its documentation is kept.

The committed reference holds the *released* rules (`since` at most packlint.__version__, written with
`--released`): a rule added for the next release stays out of it, and out of the CHANGELOG, until the
release helper (tools/release.py) cuts that release, so adding a rule touches its entry and a fixture only."""

from __future__ import annotations

from pathlib import Path

REGENERATE = "packlint rules --format markdown --released > docs/rules-reference.md"


def since_line(rule, version: str | None = None) -> str | None:
    """`Added in packlint 0.2.0.`, `... (unreleased).` for a rule newer than `version` (the running
    packlint's by default), None for a rule without `since` (a user rule file's)."""
    from packlint.rule_table import is_released

    if getattr(rule, "since", None) is None:
        return None
    released = is_released(rule) if version is None else is_released(rule, version)
    return f"Added in packlint {rule.since}" + ("." if released else " (unreleased).")


def rule_markdown(rule, level: int = 1, version: str | None = None) -> str:
    """One rule: heading, summary, the release that added it, explanation, its tested bad and good
    examples, references, condition. `level` is the Markdown level of the rule's heading; its sections
    are one level below. `version`: the packlint release the page is for (the running one by default)."""
    h, sub = "#" * level, "#" * (level + 1)
    out = [f"{h} {rule.code} `{rule.name}` ({rule.severity})", "", rule.summary, ""]
    since = since_line(rule, version)
    if since:
        out += [since, ""]
    out += [rule.explanation, ""]
    for kind, heading in (("bad", "Bad"), ("good", "Good")):
        for ex in (e for e in rule.examples if e.kind == kind):
            title = f" ({ex.title})" if ex.title else ""
            out += [f"{sub} {heading}{title}", ""]
            for path, source in sorted((getattr(ex, "code", None) or {}).items()):
                out += [f"The code it launches, `{path}`:", "", "```python", source.strip("\n"), "```", ""]
            out += ["```bash", _visible(ex.script.strip("\n")), "```", ""]
    if rule.references:
        out += [f"{sub} References", ""] + [f"- {r}" for r in rule.references] + [""]
    fix = getattr(rule, "fix", None)
    if fix is not None:
        how = "`packlint check --fix`" if fix.applicability == "safe" else "`packlint check --fix --unsafe-fixes`"
        span = fix.at.text if fix.at is not None else rule.report_at.text
        to = f" to `{fix.to.text}`" if fix.to is not None else ""
        what = f"`{fix.kind}` at `{span}`{to}"
        key, value = _constant(getattr(fix, "key", None)), _constant(getattr(fix, "value", None))
        if fix.kind == "set_key":
            what = f"`set_key` sets `{key}: {value}` in the config file of `{span}`, beside it"
        elif fix.kind == "replace_value":
            what = f"`replace_value` sets the value at `{span}` to `{value}`"
        elif fix.kind == "delete_key":
            what = f"`delete_key` deletes the key at `{span}`"
        out += [f"{sub} Fix", "", f"{how} applies it ({fix.applicability}): {what} ([fixes.md](fixes.md)).", ""]
    out += [f"{sub} Condition", "", "```", rule.when_text, "```", ""]
    return "\n".join(out)


def severities(rule) -> str:
    """The rule's severity, then any other severity its overrides give it: `error / warning`."""
    seen = [rule.severity]
    for o in rule.overrides:
        if o.severity and o.severity not in seen:
            seen.append(o.severity)
    return " / ".join(seen)


def anchor(rule) -> str:
    """The GitHub anchor of the rule's `## CODE `name` (severity)` heading."""
    return f"{rule.code}-{rule.name}-{rule.severity}".lower()


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _defined_in(rule) -> str:
    return f"rules/{Path(rule.file).name}" if rule.builtin else str(rule.file)


def table_markdown(table, *, released: bool = False, version: str | None = None) -> str:
    """docs/rules-reference.md: an index table, then one section per rule, sorted by code. `released`:
    only the rules packlint `version` (the running one by default) ships."""
    from packlint.rule_table import is_released

    rules = sorted(table.rules, key=lambda r: r.code)
    if released:
        rules = [r for r in rules if (is_released(r) if version is None else is_released(r, version))]
    out = [
        "# Rule reference",
        "",
        f"<!-- Generated from rules/*.toml by `packlint rules --format markdown --released`; do not edit by hand."
        f" Regenerate: {REGENERATE} -->",
        "",
        "Every rule packlint ships, generated from its entry in `rules/*.toml` (the table format and the",
        "condition language: [rules.md](rules.md)). The bad and good examples are run by the test suite;",
        "`packlint explain CODE` prints the same section in a terminal.",
        "",
        "| code | name | severity | since | summary |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        since = getattr(r, "since", None) or "-"
        out.append(f"| [{r.code}](#{anchor(r)}) | `{r.name}` | {severities(r)} | {since} | {_cell(r.summary)} |")
    out.append("")
    for r in rules:
        section = rule_markdown(r, level=2, version=version).rstrip("\n")
        out += [section, "", f"Defined in `{_defined_in(r)}`.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _visible(script: str) -> str:
    """A carriage return (PK904's example) shown as `\\r` at the end of its line: a raw CR would be
    read back as a line break."""
    return script.replace("\r\n", "\\r\n").replace("\r", "\\r")


def _constant(template) -> str:
    """A template's text when it has no `{expression}` (else `...`)."""
    if template is None:
        return ""
    parts = getattr(template, "parts", [])
    return "".join(parts) if all(isinstance(p, str) for p in parts) else "..."
