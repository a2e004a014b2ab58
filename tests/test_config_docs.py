"""The docs pages document every flag of check/run/config (docs/check.md, docs/integrations.md,
docs/configuration.md), every format, config key and suppression form; the YAML snippets of
docs/integrations.md parse and name the hook that .pre-commit-hooks.yaml defines."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CHECK_DOC = (DOCS / "check.md").read_text()
CONFIG_DOC = (DOCS / "configuration.md").read_text()
INTEGRATIONS_DOC = (DOCS / "integrations.md").read_text()
# the page that documents each command's flags
COMMAND_DOC = {"packlint.cli.check": CHECK_DOC, "packlint.cli.run": INTEGRATIONS_DOC,
               "packlint.cli.config": CONFIG_DOC}


def options(module: str) -> list[str]:
    import importlib

    p = argparse.ArgumentParser()
    importlib.import_module(module).add_arguments(p)
    return sorted({o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"})


@pytest.mark.parametrize("module", ["packlint.cli.check", "packlint.cli.run", "packlint.cli.config"])
def test_every_flag_is_documented(module):
    if module not in COMMAND_DOC:
        pytest.fail(f"name the docs page that documents {module}'s flags in COMMAND_DOC")
    doc = COMMAND_DOC[module]
    missing = [o for o in options(module) if f"`{o}" not in doc and f"`{o}" not in CHECK_DOC and o not in doc]
    assert missing == []


def test_formats_keys_and_suppression_forms():
    from packlint.cli.check import FORMATS
    from packlint.config import KEYS

    for fmt in FORMATS:
        assert f"| `{fmt}` |" in INTEGRATIONS_DOC, fmt
    for key in KEYS:
        assert f"| `{key}` |" in CONFIG_DOC, key
    for form in ("# packlint: disable=", "# packlint: disable-file=", "`all`", "--", "PK901"):
        assert form in CONFIG_DOC
    for status in ("| 0 |", "| 1 |", "| 2 |"):
        assert status in CHECK_DOC
        assert status in INTEGRATIONS_DOC


def test_yaml_snippets_parse_and_match_the_hook():
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hooks == [{**hooks[0], "id": "packlint", "entry": "packlint-pre-commit", "language": "python",
                      "types": ["text"], "require_serial": True}]
    blocks = re.findall(r"```yaml\n(.*?)```", INTEGRATIONS_DOC, re.S)
    assert len(blocks) == 2
    precommit, actions = (yaml.safe_load(b) for b in blocks)
    assert precommit["repos"][0]["hooks"][0]["id"] == hooks[0]["id"]
    steps = actions["jobs"]["packlint"]["steps"]
    assert any("--format sarif" in s.get("run", "") for s in steps)
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif") for s in steps)
