"""Shared pytest setup for the test suite (keep minimal)."""

import sys
from pathlib import Path

# make tests/ helpers (tests/oracle) importable however pytest is invoked
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# issue 20: a launch's stack version may come from the distribution installed in packlint's own
# environment; the suite's expected outputs must not depend on what this venv holds (subprocesses
# inherit it). Tests of that source unset it themselves.
import os  # noqa: E402

os.environ.setdefault("PACKLINT_IGNORE_INSTALLED", "1")


# The test files that need the ML stack (torch, transformers, megatron-core): the runtime probe and the
# checks against the real transformers. Their tests carry the `torch` marker; `-m "not torch"` (the fast
# subset in the README) leaves these files uncollected, so it runs where the stack is not installed.
ML_STACK_FILES = frozenset(
    {
        "test_probe.py",
        "test_probe_hf.py",
        "test_probe_matrix.py",
        "test_probe_megatron_model.py",
        "test_hf_code.py",
        "test_probe_exact.py",
        "test_probe_reference.py",
        "test_guard.py",
    }
)


def _without_torch(config) -> bool:
    expr = (config.getoption("markexpr", "") or "").replace(" ", "")
    return "nottorch" in expr


def pytest_ignore_collect(collection_path, config):
    if collection_path.name in ML_STACK_FILES and _without_torch(config):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.path.name in ML_STACK_FILES:
            item.add_marker(pytest.mark.torch)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _one_torch_thread(request):
    """The ML stack's tests run tiny models: one thread is faster than two fighting over a shared 2-core
    machine. torch is imported only for those tests (the fast subset never imports it)."""
    if request.node.get_closest_marker("torch") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
