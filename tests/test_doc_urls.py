"""Every documentation URL packlint prints resolves: the rule URL of SARIF (`helpUri`), JSON (`url`),
GitLab, the editor (a diagnostic's `codeDescription`) and the links of `packlint explain` name a file of
this repository that exists and an anchor that its headings make (GitHub's anchor rule). 0.2 printed
links to 64 rules the reference did not document yet (issue 31)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from packlint.checking import CheckResult
from packlint.cli import main
from packlint.config import DEFAULT_DOC_URL
from packlint.rule_docs import rule_markdown
from packlint.rule_table import load_table

ROOT = Path(__file__).resolve().parents[1]
REPO_URL = "https://github.com/packlint/packlint/blob/main/"


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes for a Markdown file's headings: lower case, punctuation but `-` and `_`
    dropped, spaces to `-`; a repeated heading gets `-1`, `-2`, ...; fenced code is not a heading."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6} +(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def resolves(url: str, doc: Path = ROOT / "docs" / "rules-reference.md") -> str | None:
    """Why `url` does not resolve in this checkout, or None. A repository URL (REPO_URL...), or a link
    written in `doc` (relative to its directory; `#x` is a heading of `doc` itself); any other URL (a
    paper, another project) is not this repository's to check."""
    if url.startswith(REPO_URL):
        target = ROOT / url[len(REPO_URL) :].split("#")[0]
    elif re.match(r"[a-z]+:", url):
        return None
    elif url.startswith("#"):
        target = doc
    else:
        target = (doc.parent / url.split("#")[0]).resolve()
    if not target.exists():
        return f"{url}: no file {target}"
    if "#" in url:
        frag = url.split("#", 1)[1]
        if not target.is_file() or frag not in github_anchors(target.read_text()):
            return f"{url}: no heading makes #{frag} in {target}"
    return None


def test_anchor_rule_matches_githubs():
    text = "# Title\n## PK001 `packing-gate-leak` (error)\n```\n# not a heading\n```\n## Fix\n## Fix\n"
    assert github_anchors(text) == {"title", "pk001-packing-gate-leak-error", "fix", "fix-1"}
    assert resolves(REPO_URL + "docs/rules-reference.md#no-such-rule") is not None
    assert resolves(REPO_URL + "docs/no-such-file.md") is not None


def test_every_rules_url_resolves():
    """The URL of every built-in rule, as every reporter and the editor make it (CheckResult.doc_url_for)."""
    table = load_table()
    result = CheckResult()
    result.rules = {r.code: r for r in table.rules}
    result.doc_url = DEFAULT_DOC_URL
    bad = [why for r in table.rules if (why := resolves(result.doc_url_for(r.code) or "")) is not None]
    assert not bad, bad[:5]


@pytest.mark.parametrize("fmt", ["sarif", "json", "gitlab"])
def test_urls_in_reports_resolve(fmt, capsys):
    capsys.readouterr()
    main(["check", "--isolated", "--exit-zero", "--format", fmt, str(ROOT / "examples")])
    out = capsys.readouterr().out
    json.loads(out)
    urls = set(re.findall(r"https://github\.com/packlint/packlint/blob/[^\s\"\\)]+", out))
    assert urls, f"{fmt}: no rule URL in the report"
    bad = [why for u in sorted(urls) if (why := resolves(u)) is not None]
    assert not bad, bad


def test_explain_links_resolve():
    """`packlint explain` prints the rule's section; its links are relative to docs/ (where the reference
    page lives) or absolute."""
    bad = []
    for rule in load_table().rules:
        prose = re.sub(r"```.*?```", "", rule_markdown(rule), flags=re.S)
        prose = re.sub(r"`[^`\n]*`", "", prose)
        for link in re.findall(r"\]\(([^)\s]+)\)", prose):
            why = resolves(link)
            if why:
                bad.append((rule.code, why))
    assert not bad, bad[:5]
    assert resolves("fixes.md") is None and resolves("rules.md#no-such-heading") is not None


def test_editor_diagnostics_carry_a_resolving_url(tmp_path):
    """The editor's diagnostic links (codeDescription.href) come from the same analysis."""
    pytest.importorskip("pygls")
    from packlint.server import PacklintServer

    script = tmp_path / "train.sh"
    script.write_text((ROOT / "examples" / "pk001_gate_leak.sh").read_text())
    server = PacklintServer.__new__(PacklintServer)
    server.analyses = {}
    analysis = server.analyse(script.as_uri(), script.read_text())
    assert analysis.urls and all(resolves(u) is None for u in analysis.urls.values()), analysis.urls


USER_DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_docs_stand_alone():
    """Every link of the README, the CHANGELOG and docs/ names a file of the repository and a heading
    that exists; no page cites a document outside the repository (the project's `shared/` notes)."""
    bad = []
    for doc in USER_DOCS:
        text = doc.read_text()
        assert "shared/research" not in text and "../shared/" not in text, doc.name
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
        for link in re.findall(r"\]\(([^)\s]+)\)", prose):
            why = resolves(link, doc)
            if why:
                bad.append((doc.name, why))
    assert not bad, bad[:10]
