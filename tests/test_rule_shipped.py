"""The built-in rule table a release ships compiled (packlint/rule_shipped.py, tools/release.py): a check with an empty
cache decodes it instead of compiling the rule files, only where its key is what is installed beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packlint import __version__, rule_shipped, rule_table
from packlint.rule_cache import dumps

RULES = Path(__file__).resolve().parent.parent / "rules"


@pytest.fixture()
def installed(tmp_path: Path) -> Path:
    """A package folder whose _rules holds the built-in rule files and the table a release would ship for them."""
    home = tmp_path / "site-packages" / "packlint"
    shutil.copytree(RULES, home / "_rules", ignore=shutil.ignore_patterns(f"{rule_shipped.PREFIX}*"))
    path, text = rule_shipped.shipped_file(home / "_rules", __version__)
    path.write_text(text)
    return home


def _blobs(home: Path) -> list[tuple[str, bytes, bool]]:
    return [(str(p), p.read_bytes(), True) for p in sorted((home / "_rules").glob("*.toml"))]


def test_the_shipped_table_is_the_compiled_table(installed):
    blobs = _blobs(installed)
    shipped = rule_shipped.shipped_table(blobs, home=installed)
    assert shipped is not None
    assert dumps(shipped) == dumps(rule_table.compile_table(blobs))
    assert [r.code for r in shipped.rules] == [r.code for r in rule_table.load_table(use_cache=False).rules]


def test_a_check_with_an_empty_cache_decodes_it_instead_of_compiling(installed, tmp_path, monkeypatch):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(rule_table, "builtin_rule_files", lambda: sorted((installed / "_rules").glob("*.toml")))
    real = rule_shipped.shipped_table
    monkeypatch.setattr(rule_shipped, "shipped_table", lambda blobs, fallback=None: real(blobs, fallback, installed))

    def no_compile(blobs):
        raise AssertionError("compiled")

    monkeypatch.setattr(rule_table, "compile_table", no_compile)
    table = rule_table.load_table()
    assert "PK001" in {r.code for r in table.rules}
    with pytest.raises(AssertionError):  # (a user's own rule file: the shipped table is not that table)
        rule_table.load_table([RULES / "packing.toml"], builtin=False)


def test_it_is_not_used_for_other_files_another_release_or_a_damaged_file(installed, tmp_path):
    blobs = _blobs(installed)
    edited = [(n, d + (b"\n" if i == 0 else b""), b) for i, (n, d, b) in enumerate(blobs)]
    assert rule_shipped.shipped_table(edited, home=installed) is None  # (a rule file changed since the release)
    assert rule_shipped.key(blobs, __version__) != rule_shipped.key(blobs, __version__ + ".1")
    assert rule_shipped.shipped_table(blobs, home=tmp_path) is None  # (a checkout's rules/: not the package's)
    (shipped,) = (installed / "_rules").glob(f"{rule_shipped.PREFIX}*.json")
    shipped.write_text('{"format": 999}')
    assert rule_shipped.shipped_table(blobs, home=installed) is None
    shipped.write_bytes(b"\xff" * 64)
    assert rule_shipped.shipped_table(blobs, home=installed) is None
    assert rule_shipped.stale_files(installed / "_rules", installed / "_rules" / "other.json") == [shipped]
