"""The benchmark corpus must be reproducible and valid bash, or the published numbers mean nothing.

Not a timed test: nothing here measures speed (that is `python benchmarks/run.py`)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_corpus", Path(__file__).resolve().parent.parent / "benchmarks" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
sys.modules["bench_corpus"] = corpus  # dataclasses look their module up there
_spec.loader.exec_module(corpus)

PARAMS = corpus.Params(seed=7, size=30, quick=True)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes(tmp_path):
    corpus.generate(tmp_path / "a", PARAMS)
    corpus.generate(tmp_path / "b", PARAMS)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert corpus.is_fresh(tmp_path / "a", PARAMS)
    assert not corpus.is_fresh(tmp_path / "a", corpus.Params(seed=8, size=30, quick=True))


def test_corpus_shape(tmp_path):
    manifest = corpus.generate(tmp_path, PARAMS)
    scripts = sorted((tmp_path / "scripts").glob("train_*.sh"))
    assert len(scripts) == PARAMS.size
    assert any(b"\r\n" in p.read_bytes() for p in scripts)  # some CRLF scripts
    sizes = [manifest["lines"][f"scripts/{p.name}"] for p in scripts]
    assert min(sizes) >= 40 and max(sizes) <= corpus.MAX_LINES + 60
    assert 200 <= manifest["lines"]["clean.sh"] <= 300


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_generated_scripts_pass_bash_n(tmp_path):
    corpus.generate(tmp_path, PARAMS)
    assert corpus.bash_syntax_errors(tmp_path) == []


def test_config_bench_versions_differ_only_in_the_config_files(tmp_path):
    """benchmarks/config_bench.py (issue 20's <= 1.3x): the version with config files reads the YAML and the
    DeepSpeed JSON as LLaMA-Factory would; the one without reads none and does not import the YAML reader."""
    spec = importlib.util.spec_from_file_location(
        "bench_config", Path(__file__).resolve().parent.parent / "benchmarks" / "config_bench.py")
    config_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config_bench)
    import os

    with_ = config_bench.probe(config_bench.write_case(tmp_path / "with", True), dict(os.environ))
    without = config_bench.probe(config_bench.write_case(tmp_path / "without", False), dict(os.environ))
    assert with_ == {"stack": "llamafactory", "yaml": True, "files": [
        "examples/train_full/qwen2_5_full_sft.yaml", "examples/deepspeed/ds_z3_config.json"]}
    assert without == {"stack": "llamafactory", "yaml": False, "files": []}
    assert config_bench.sanity_notes({"checks": {"with": with_, "without": without}}) == []
    text = (tmp_path / "with" / "run.sh").read_text()
    assert (tmp_path / "without" / "run.sh").read_text() == text.replace(config_bench.CONFIG_ARG, "").replace(
        config_bench.DEEPSPEED_ARG, "")
