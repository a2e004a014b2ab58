"""Shared pytest setup for the test suite (keep minimal)."""

import sys
from pathlib import Path

# make tests/ helpers (tests/oracle) importable however pytest is invoked
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
