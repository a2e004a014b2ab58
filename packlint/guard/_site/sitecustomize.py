"""packlint's guard, loaded by `packlint run --guard` (this directory first on PYTHONPATH).

Runs any sitecustomize that this one shadows, then, when PACKLINT_GUARD is set, installs the import hook
of packlint.guard.inject. Never stops the process: any problem is one line on stderr.
"""

import os
import sys


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or os.path.abspath(spec.origin or "") == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _guard() -> None:
    if not os.environ.get("PACKLINT_GUARD"):
        return
    try:
        from packlint.guard import inject
    except ImportError:
        home = os.environ.get("PACKLINT_GUARD_HOME")
        if not home:
            raise
        sys.path.append(home)  # last: packlint's own directory never shadows the user's packages
        from packlint.guard import inject
    inject.install()


try:
    _chain()
except Exception as exc:  # noqa: BLE001
    print(f"packlint-guard: the sitecustomize it shadows failed: {type(exc).__name__}: {exc}", file=sys.stderr)
try:
    _guard()
except Exception as exc:  # noqa: BLE001
    print(f"packlint-guard: ERROR not installed: {type(exc).__name__}: {exc}", file=sys.stderr)
