#!/usr/bin/env python3
"""The release helper: writes what a release adds to the committed docs, from the rules' own `since`.

A rule carries `since = "X.Y.Z"` in its table entry: the packlint release that first ships it. A rule
whose `since` is newer than `packlint.__version__` is *unreleased*: it is checked like any other and
`packlint rules` marks it, but it is not yet in CHANGELOG.md nor in docs/rules-reference.md. So adding
a rule touches its table entry and one fixture, nothing else; this script brings it into the docs when
the release that ships it is cut:

    python tools/release.py 0.3.0     # cut 0.3.0: set packlint.__version__, add a "## 0.3.0" section
                                      # with a line per rule new in it, regenerate the reference
    python tools/release.py           # re-sync at the current version (nothing to do when in sync)
    python tools/release.py --check   # write nothing; exit 1 and say what is out of date

For every released rule (since <= the version) that has no `- CODE ` line in CHANGELOG.md, it adds
`- CODE name (severity, new): summary` to that version's "Rule codes added or changed" list, creating
the section at the top when needed; docs/rules-reference.md becomes
`packlint rules --format markdown --released` at that version. Tests (tests/test_release.py,
tests/test_rule_docs.py) hold the committed files to the same standard for released rules.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from packlint import __version__  # noqa: E402
from packlint.rule_docs import table_markdown  # noqa: E402
from packlint.rule_shipped import shipped_file, stale_files  # noqa: E402
from packlint.rule_table import SINCE_PATTERN, is_released, load_table, version_tuple  # noqa: E402

CHANGELOG = ROOT / "CHANGELOG.md"
REFERENCE = ROOT / "docs" / "rules-reference.md"
VERSION_FILE = ROOT / "packlint" / "__init__.py"
RULES = ROOT / "rules"
RULES_HEADING = "Rule codes added or changed:"


def changelog_line(rule) -> str:
    return f"- {rule.code} {rule.name} ({rule.severity}, new): {rule.summary}"


def missing_from_changelog(text: str, rules, version: str) -> list:
    """The rules released at `version` that have no `- CODE ` line in the changelog text."""
    return [
        r
        for r in sorted(rules, key=lambda r: r.code)
        if is_released(r, version) and not re.search(rf"^- {re.escape(r.code)} ", text, re.M)
    ]


def changelog_with(text: str, rules, version: str) -> str:
    """The changelog text with a line for every released rule it lacks, in `version`'s section (made
    at the top, below the file's introduction, when missing)."""
    lines = [changelog_line(r) for r in missing_from_changelog(text, rules, version)]
    if not lines:
        return text
    heading = re.search(rf"^## {re.escape(version)}\b.*$", text, re.M)
    if heading is None:
        first = re.search(r"^## ", text, re.M)
        at = first.start() if first else len(text)
        section = f"## {version}\n\n{RULES_HEADING}\n\n" + "\n".join(lines) + "\n\n"
        return text[:at] + section + text[at:]
    end = re.search(r"^## ", text[heading.end() :], re.M)
    body_end = heading.end() + end.start() if end else len(text)
    body = text[heading.end() : body_end]
    list_head = body.find(RULES_HEADING)
    if list_head < 0:
        insert = f"\n\n{RULES_HEADING}\n\n" + "\n".join(lines)
        return text[: heading.end()] + insert + text[heading.end() :]
    # after the list's last item (items may continue on indented lines)
    pos = heading.end() + list_head + len(RULES_HEADING)
    items = re.compile(r"\n\n((?:- [^\n]*(?:\n|$)(?:  [^\n]*(?:\n|$))*)+)").match(text, pos)
    if items is None:  # an empty list
        return text[:pos] + "\n\n" + "\n".join(lines) + text[pos:]
    at = items.end(1)
    block = "\n".join(lines) + "\n" if text[at - 1] == "\n" else "\n" + "\n".join(lines)
    return text[:at] + block + text[at:]


def version_file_with(text: str, version: str) -> str:
    return re.sub(r'^__version__ = "[^"]*"', f'__version__ = "{version}"', text, count=1, flags=re.M)


def plan(version: str) -> dict[Path, str]:
    """The files this release changes, with their new text (only those that differ)."""
    table = load_table(use_cache=False)
    new = {
        VERSION_FILE: version_file_with(VERSION_FILE.read_text(), version),
        CHANGELOG: changelog_with(CHANGELOG.read_text(), table.rules, version),
        REFERENCE: table_markdown(table, released=True, version=version),
    }
    return {path: text for path, text in new.items() if path.read_text() != text}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tools/release.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("version", nargs="?", default=__version__, help=f"the release to cut (default {__version__})")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    args = ap.parse_args(argv)
    if not re.match(SINCE_PATTERN, args.version):
        ap.error(f"version {args.version!r} is not X.Y.Z")
    if version_tuple(args.version) < version_tuple(__version__):
        ap.error(f"version {args.version} is older than the current {__version__}")
    changes = plan(args.version)
    for path in changes:
        verb = "out of date" if args.check else "updated"
        print(f"{path.relative_to(ROOT)}: {verb}")
        if not args.check:
            path.write_text(changes[path])
    if not changes:
        print(f"release {args.version}: CHANGELOG.md, docs/rules-reference.md and the version are in sync")
    shipped_table(args.version, args.check)
    return 1 if args.check and changes else 0


def shipped_table(version: str, check: bool) -> None:
    """The compiled built-in table the release ships (packlint/rule_shipped.py): written by a release; between
    releases, an edited rule or condition module leaves it out of date, which only means that a check with an empty
    cache compiles the rules (not an error of --check)."""
    path, text = shipped_file(RULES, version)
    stale = stale_files(RULES, path)
    fresh = path.exists() and path.read_text() == text
    if check:
        if not fresh:
            print(f"{path.relative_to(ROOT)}: not written (the next release writes it; until then a check with an "
                  "empty cache compiles the rules)")
        return
    for old in stale:
        old.unlink()
        print(f"{old.relative_to(ROOT)}: removed")
    if not fresh:
        path.write_text(text)
        print(f"{path.relative_to(ROOT)}: written")


if __name__ == "__main__":
    sys.exit(main())
