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
