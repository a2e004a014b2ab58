"""The release is pinnable: one version (packlint.__version__) that the build, `packlint --version` and
CHANGELOG.md agree on; every rule has a valid `since` (the release that first ships it) and every
released rule (since <= __version__) has a CHANGELOG line in that release's section. A rule added for
the next release is unreleased: tools/release.py writes its line when that release is cut."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import tomllib

from packlint import __version__

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def test_version_lives_in_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "packlint.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_cli_prints_the_version(capsys):
    from packlint.cli import main

    try:
        main(["--version"])
    except SystemExit:
        pass
    assert capsys.readouterr().out.strip() == f"packlint {__version__}"


def _next_sections_skipped(versions: list[str]) -> list[str]:
    """The section versions without the leading ones for a later release still being written
    (`## 0.3.0 (unreleased)` above this version's section: the next release's notes)."""
    from packlint.rule_table import version_tuple

    i = 0
    while i < len(versions) and version_tuple(versions[i]) > version_tuple(__version__):
        i += 1
    return versions[i:]


def test_changelog_has_a_section_for_this_version_first():
    headings = re.findall(r"^## (\d+\.\d+\.\d+)(.*)$", CHANGELOG, re.M)
    versions = _next_sections_skipped([v for v, _rest in headings])
    assert versions and versions[0] == __version__
    # a section above this version's is a later release's, still unreleased
    for v, rest in headings[: len(headings) - len(versions)]:
        assert "(unreleased)" in rest, v


def test_version_is_the_changelogs_newest_release(capsys):
    """`packlint --version` names the newest release the CHANGELOG dates: the first `## X.Y.Z (YYYY-MM-DD)`
    heading (an `## Unreleased` section, or a later version marked `(unreleased)`, may sit above it)."""
    from packlint.cli import main

    dated = re.findall(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2})\)$", CHANGELOG, re.M)
    assert dated, "no dated release in CHANGELOG.md"
    try:
        main(["--version"])
    except SystemExit:
        pass
    assert capsys.readouterr().out.strip() == f"packlint {dated[0][0]}"
    newest = re.search(rf"^## {re.escape(dated[0][0])} .*$", CHANGELOG, re.M)
    assert newest is not None and "unreleased" not in newest.group(0)


def _release_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("release_tool", ROOT / "tools" / "release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(text: str) -> dict[str, str]:
    """CHANGELOG.md's sections by version: {"0.2.0": body, ...}."""
    parts = re.split(r"^## (\d+\.\d+\.\d+).*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_rule_has_a_valid_since():
    from packlint.rule_table import load_table, version_tuple

    released_versions = set(_sections(CHANGELOG))
    for rule in load_table(use_cache=False).rules:
        assert rule.since is not None and re.fullmatch(r"\d+\.\d+\.\d+", rule.since), rule.code
        # a released rule names a release the CHANGELOG has; an unreleased one a later release
        if version_tuple(rule.since) <= version_tuple(__version__):
            assert rule.since in released_versions, (rule.code, rule.since)


def test_every_released_rule_has_a_changelog_line_in_its_release():
    from packlint.rule_table import is_released, load_table

    sections = _sections(CHANGELOG)
    released = [r for r in load_table(use_cache=False).rules if is_released(r)]
    missing = sorted(r.code for r in released if not re.search(rf"^- {r.code} ", CHANGELOG, re.M))
    assert not missing, f"released rule codes without a CHANGELOG line (run `python tools/release.py`): {missing}"
    # the oldest section that names the code is the release in its `since`
    for rule in released:
        first = [v for v, body in sections.items() if re.search(rf"(^- |, ){rule.code} ", body, re.M)][-1]
        assert first == rule.since, (rule.code, rule.since, first)


def test_release_tool_finds_nothing_to_do():
    assert _release_tool().main(["--check"]) == 0


def test_release_tool_adds_lines_for_rules_released_at_the_version():
    from packlint.rule_table import load_table

    tool = _release_tool()
    rules = load_table(use_cache=False).rules
    pk201 = next(r for r in rules if r.code == "PK201")
    without = re.sub(r"^- PK201 .*\n", "", CHANGELOG, flags=re.M)
    # at 0.1.0 PK201 (since 0.2.0) is not released yet: nothing to add
    assert tool.changelog_with(without, rules, "0.1.0") == without
    added = tool.changelog_with(without, rules, "0.2.0")
    assert added.count("\n- PK201 ") == 1 and tool.changelog_line(pk201) in _sections(added)["0.2.0"]
    assert added.replace(tool.changelog_line(pk201) + "\n", "") == without
    # a release without a section gets one at the top, with the rule under "Rule codes added or changed"
    nxt = f"{int(__version__.split('.')[0]) + 1}.0.0"  # a release no section names yet
    new_rule = SimpleNamespace(code="PK999", name="new-rule", severity="error", summary="it catches", since=nxt)
    assert tool.changelog_with(CHANGELOG, [new_rule], __version__) == CHANGELOG  # unreleased now
    cut = tool.changelog_with(CHANGELOG, [new_rule], nxt)
    found = re.findall(r"^## (\d\S*)", cut, re.M)
    assert found[0] == nxt and _next_sections_skipped(found[1:])[0] == __version__
    line = "- PK999 new-rule (error, new): it catches"
    assert f"## {nxt}\n\n{tool.RULES_HEADING}\n\n{line}\n\n## " in cut
    assert tool.version_file_with('x = 1\n__version__ = "0.2.0"\n', "0.3.0") == 'x = 1\n__version__ = "0.3.0"\n'



def test_the_wheel_lists_every_package():
    """setuptools packages only what `[tool.setuptools] packages` names: a package directory missing
    from it installs without complaint (editable installs hide it) and the installed packlint then
    fails with an ImportError on the first script it checks."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(project["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("packlint", "runtime_probe")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
