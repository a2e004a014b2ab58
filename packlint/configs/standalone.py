"""`packlint check x.yaml`: a config file of a known stack checked on its own, as the launch its
stack's usual command would make (`llamafactory-cli train x.yaml`, `axolotl train x.yml`,
`trl sft --config x.yaml`, `deepspeed ... --deepspeed_config ds.json`, ...). The stack is recognised
by the file's keys; the launch is a one-line script that names the file, analysed beside it."""

from __future__ import annotations

import os
import shlex
from typing import Any

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")

# stack -> the command that reads the file (NAME: the file's name, beside the synthetic script)
COMMANDS = {
    "llamafactory": "llamafactory-cli train NAME",
    "axolotl": "axolotl train NAME",
    "trl": "trl sft --config NAME",
    "swift": "swift sft NAME",
    "deepspeed": "deepspeed train.py --deepspeed --deepspeed_config NAME",
    "torchtitan": "torchrun -m torchtitan.train --job.config_file NAME",
    "megatron-bridge": "python run_recipe.py --config-file NAME",
    "nemo-rl": "python examples/run_grpo.py --config NAME",
}


def is_config_name(path: str) -> bool:
    return path.lower().endswith(CONFIG_SUFFIXES)


def recognise(d: Any, fmt: str) -> str | None:
    """The stack whose config file this is, by its keys; None when no stack's shape matches."""
    if not isinstance(d, dict):
        return None
    if fmt == "toml":
        return "torchtitan" if {"job", "model", "training"} <= set(d) else None
    if fmt == "json" and {"zero_optimization", "train_batch_size", "train_micro_batch_size_per_gpu"} & set(d):
        return "deepspeed"
    if "stage" in d and "model_name_or_path" in d:
        return "llamafactory"
    if "base_model" in d and "datasets" in d:
        return "axolotl"
    if "model" in d and ("train_type" in d or "rlhf_type" in d):
        return "swift"
    if "model_name_or_path" in d and {"dataset_name", "packing", "max_length", "padding_free"} & set(d):
        return "trl"
    if isinstance(d.get("train"), dict) and isinstance(d.get("model"), dict) and "micro_batch_size" in d["train"]:
        return "megatron-bridge"
    if isinstance(d.get("policy"), dict) and isinstance(d.get("cluster"), dict):
        return "nemo-rl"
    return None


def launch_for(path: str) -> tuple[bytes, str] | None:
    """(the one-line launch script, the stack) for a config file of a known stack, else None."""
    from packlint.configs import read_config_file
    from packlint.configs.files import format_of

    fmt = format_of(path)
    root, err = read_config_file(path, fmt, "pyyaml", near=path)
    if err is not None or root is None:
        # an unreadable file: say so through the stack it names by its suffix's usual reader
        stack = "deepspeed" if fmt == "json" else "torchtitan" if fmt == "toml" else None
        if stack is None:
            return None
    else:
        stack = recognise(root.plain(), fmt)
        if stack is None:
            return None
    command = COMMANDS[stack].replace("NAME", shlex.quote(os.path.basename(path)))
    return (command + "\n").encode(), stack


def recognise_text(path: str, text: str) -> bool:
    """Whether an editor's document (unsaved text) is a config file of a known stack."""
    from packlint.configs import set_text_override

    set_text_override(path, text.encode("utf-8", "surrogatepass"))
    return launch_for(path) is not None


KNOWN = ", ".join(sorted(COMMANDS))
