"""The launch model's declared contract (packlint/model_types.py): the published JSON Schema is the
one generated from the declaration, and every inspect fixture's output validates against it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from packlint.model_types import json_schema, schema_text

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "docs" / "launch-model.schema.json"
EXPECTED = sorted((ROOT / "tests" / "fixtures" / "inspect").glob("*.expected.json"))


def test_published_schema_is_generated_from_the_declaration():
    assert SCHEMA.read_text() == schema_text(), (
        "docs/launch-model.schema.json is stale: regenerate it with "
        "`python -m packlint.model_types > docs/launch-model.schema.json`"
    )


def test_schema_is_valid():
    jsonschema.Draft202012Validator.check_schema(json_schema())


@pytest.mark.parametrize("path", EXPECTED, ids=[p.name.removesuffix(".expected.json") for p in EXPECTED])
def test_inspect_output_validates(path):
    # the snapshots are what `packlint inspect --format json` prints (tests/test_inspect_fixtures.py)
    validator = jsonschema.Draft202012Validator(json_schema())
    errors = sorted(validator.iter_errors(json.loads(path.read_text())), key=lambda e: list(e.path))
    assert not errors, f"{path.name}: {errors[0].json_path}: {errors[0].message}"


def test_a_wrong_shape_is_rejected():
    bad = json.loads(EXPECTED[0].read_text())
    bad["launches"][0]["variants"][0]["config"] = {"stack": 3}
    assert list(jsonschema.Draft202012Validator(json_schema()).iter_errors(bad))


# `code` (how each launch's program was matched to a source file) is not in the inspect snapshots
# (they run without a code base); these outputs carry it, found and not found
WITH_CODE = [
    "tests/fixtures/codebase/megatron_like/examples/train_gpt.sh",
    "examples/pk001_gate_leak.sh",
]


@pytest.mark.parametrize("script", WITH_CODE, ids=[Path(s).parent.name + "/" + Path(s).name for s in WITH_CODE])
def test_inspect_output_with_code_resolution_validates(script, capsys, monkeypatch):
    from packlint.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["inspect", "--format", "json", script]) == 0
    model = json.loads(capsys.readouterr().out)
    assert all("code" in launch for launch in model["launches"]) and model["launches"]
    validator = jsonschema.Draft202012Validator(json_schema())
    errors = sorted(validator.iter_errors(model), key=lambda e: list(e.path))
    assert not errors, f"{script}: {errors[0].json_path}: {errors[0].message}"


def test_model_view_imports_nothing_at_run_time():
    """The accessors every consumer reads the model through (the hot path and the runtime probe
    alike) import `typing` only: not the TypedDicts, nothing of packlint's stages."""
    import subprocess
    import sys

    code = (
        "import sys; before = set(sys.modules); import packlint.model_view; "
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['packlint', 'packlint.model_view']"
