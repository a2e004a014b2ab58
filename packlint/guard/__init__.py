"""The guard: the first real batch of the real training job, checked before the first optimizer step.

`PackingGuard` (a transformers TrainerCallback), `install_hf(model)` and `install_megatron(model)` register
a one-shot forward pre-hook that reads what the model is really handed (position_ids, cu_seq_lens,
PackedSeqParams, the attention mask, separator tokens, the KV cache) and the attention path it really
runs, prints one `packlint-guard: PASS|FAIL ...` line, writes a JSON report and, in fail mode, stops the
process with exit status 3. `packlint run --guard SCRIPT` installs it in every Python process the script
launches, through a sitecustomize (packlint/guard/_site) and an import hook (packlint.guard.inject).

Never imported by the lint path. Importing this package imports neither torch nor transformers: the
names below load their modules on first use. See docs/guard.md.
"""

from __future__ import annotations

from typing import Any

from packlint.guard.settings import EXIT_GUARD, GuardSettings

__all__ = ["EXIT_GUARD", "GuardSettings", "PackingGuard", "install_hf", "install_megatron"]


def __getattr__(name: str) -> Any:
    if name in ("PackingGuard", "install_hf"):
        from packlint.guard import hf

        return getattr(hf, name)
    if name == "install_megatron":
        from packlint.guard.megatron import install_megatron

        return install_megatron
    raise AttributeError(f"module 'packlint.guard' has no attribute {name!r}")
