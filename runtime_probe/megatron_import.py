"""Import Megatron-Core's real `PackedSeqParams` without paying for `megatron/core/__init__.py`.

`import megatron.core` costs ~4-5 s (its package `__init__` pulls in ~150 modules, the optimizer,
FSDP, ...), while `megatron/core/packed_seq_params.py` itself only needs torch. So we load that one
file by path from the installed distribution, under a private module name so that a later full
`import megatron.core` (the `--megatron-layer` path) is not disturbed. If anything about that file
looks different from what we expect, fall back to the ordinary import.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import warnings
from pathlib import Path

_PRIVATE_NAME = "_packlint_megatron_packed_seq_params"
_REQUIRED_FIELDS = {"qkv_format", "cu_seqlens_q", "cu_seqlens_kv", "max_seqlen_q", "max_seqlen_kv"}

# how the class was obtained, for the report: "by path: <file>" or "import megatron.core..."
HOW: str | None = None


def _candidate_files() -> list[Path]:
    """Where packed_seq_params.py lives: the megatron-core distribution's file list, then the
    `megatron` namespace's search path (find_spec on a top-level name imports nothing)."""
    files: list[Path] = []
    try:
        from importlib import metadata

        dist = metadata.distribution("megatron-core")
        files.append(Path(str(dist.locate_file("megatron/core/packed_seq_params.py"))))
    except Exception:  # not installed as a distribution (e.g. a source checkout on PYTHONPATH)
        pass
    try:
        spec = importlib.util.find_spec("megatron")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            files.append(Path(loc) / "core" / "packed_seq_params.py")
    except (ImportError, ValueError):
        pass
    return [f for f in files if f.is_file()]


def _load_by_path(path: Path):
    spec = importlib.util.spec_from_file_location(_PRIVATE_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_PRIVATE_NAME] = module  # dataclasses looks the module up while building the class
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(_PRIVATE_NAME, None)
        raise
    return module.PackedSeqParams


def _looks_right(cls) -> bool:
    return dataclasses.is_dataclass(cls) and {f.name for f in dataclasses.fields(cls)} >= _REQUIRED_FIELDS


def load_packed_seq_params(*, full_import: bool = False):
    """Return Megatron-Core's `PackedSeqParams` class. Raises ImportError if megatron-core is absent."""
    global HOW
    if "megatron.core.packed_seq_params" in sys.modules or full_import:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed" x4
            from megatron.core.packed_seq_params import PackedSeqParams

        HOW = "import megatron.core.packed_seq_params"
        return PackedSeqParams
    if _PRIVATE_NAME in sys.modules:
        cls = getattr(sys.modules[_PRIVATE_NAME], "PackedSeqParams", None)
        if cls is not None and _looks_right(cls):
            return cls
    for path in _candidate_files():
        try:
            cls = _load_by_path(path)
        except Exception:
            continue
        if _looks_right(cls):
            HOW = f"loaded by path without megatron/core/__init__: {path}"
            return cls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.packed_seq_params import PackedSeqParams  # the slow, ordinary way

    HOW = "import megatron.core.packed_seq_params (fallback)"
    return PackedSeqParams


def megatron_version() -> str | None:
    try:
        from importlib import metadata

        return metadata.version("megatron-core")
    except Exception:
        return None
