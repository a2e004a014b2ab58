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
