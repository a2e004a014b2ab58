"""The release is pinnable: one version (packlint.__version__) that the build, `packlint --version` and
CHANGELOG.md agree on, and every rule code in the table has a CHANGELOG line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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


def test_changelog_has_a_section_for_this_version_first():
    versions = re.findall(r"^## (\d+\.\d+\.\d+)", CHANGELOG, re.M)
    assert versions and versions[0] == __version__


def test_every_rule_code_has_a_changelog_line():
    from packlint.rule_table import load_table

    codes = {r.code for r in load_table(use_cache=False).rules}
    missing = sorted(c for c in codes if not re.search(rf"^- {c} ", CHANGELOG, re.M))
    assert not missing, f"rule codes without a CHANGELOG line: {missing}"
