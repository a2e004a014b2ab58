"""Forks and the upstream premise (issues 26 and 27, h-forks): which launches upstream Megatron-LM's
snapshots, startup checks and defaults describe."""

from __future__ import annotations

from packlint.codebase.snapshots import foreign_flags, names_upstream


def test_fork_flags_are_foreign_and_typos_are_not() -> None:
    # Megatron-DeepSpeed's own flags and a flag older than the snapshots: no release defines them
    got = foreign_flags(["--deepspeed", "--zero-stage", "--deepspeed_config", "--data-impl", "--num-layers"])
    assert got == ("--deepspeed", "--zero-stage", "--deepspeed_config", "--data-impl")
    # a misspelt upstream flag stays PK201's (close to --micro-batch-size); underscores are upstream's spelling
    assert foreign_flags(["--micro-bach-size", "--tensor_model_parallel_size", "--checkpoint-activations"]) == ()


def test_a_path_naming_upstream_wins_over_its_flags() -> None:
    assert names_upstream("/workspace/Megatron-LM/pretrain_gpt.py")
    assert not names_upstream("/workspace/Megatron-DeepSpeed/pretrain_gpt.py")
    assert not names_upstream("pretrain_gpt.py")
