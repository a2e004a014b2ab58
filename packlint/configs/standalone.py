"""`packlint check x.yaml`: a config file of a known stack checked on its own, as the launch its
stack's usual command would make (`llamafactory-cli train x.yaml`, `axolotl train x.yml`,
`trl sft --config x.yaml`, `deepspeed ... --deepspeed_config ds.json`, ...). The stack is recognised
by the file's keys; the launch is a one-line script that names the file, analysed beside it."""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")

# stack -> the command that reads the file (NAME: the file's name, beside the synthetic script)
COMMANDS = {
    "llamafactory": "llamafactory-cli train NAME",
    "axolotl": "axolotl train NAME",
    "trl": "trl TRAINER --config NAME",
    "swift": "swift sft NAME",
    "deepspeed": "deepspeed train.py --deepspeed --deepspeed_config NAME",
    "torchtitan": "torchrun -m torchtitan.train --job.config_file NAME",
    "megatron-bridge": "python run_recipe.py --config-file NAME",
    "nemo-rl": "python examples/run_grpo.py --config NAME",
}
# stacks whose usual command names no program of its own: the made-up launch's `train.py` stands in for
# whatever program the user runs, so no code is read for it (a checkout's own `train.py`, found by its
# name, would judge the flags packlint wrote itself: NVlabs/Eagle's `Eagle/train.py` against the
# `--deepspeed --deepspeed_config` of `Eagle/scripts/zero2.json`)
STAND_IN_PROGRAM = frozenset({"deepspeed"})


def is_config_name(path: str) -> bool:
    return path.lower().endswith(CONFIG_SUFFIXES)


# DeepSpeed's top-level config keys (deepspeed/runtime/config.py, docs "DeepSpeed Configuration JSON")
_DS_KEYS = frozenset(
    [
        "train_batch_size",
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "optimizer",
        "scheduler",
        "communication_data_type",
        "prescale_gradients",
        "gradient_predivide_factor",
        "sparse_gradients",
        "fp16",
        "bf16",
        "bfloat16",
        "amp",
        "gradient_clipping",
        "zero_optimization",
        "zero_allow_untested_optimizer",
        "zero_force_ds_cpu_optimizer",
        "steps_per_print",
        "wall_clock_breakdown",
        "dump_state",
        "flops_profiler",
        "activation_checkpointing",
        "aio",
        "tensorboard",
        "wandb",
        "csv_monitor",
        "comms_logger",
        "autotuning",
        "elasticity",
        "data_efficiency",
        "curriculum_learning",
        "compression_training",
        "checkpoint",
        "data_types",
        "memory_breakdown",
        "nebula",
        "pipeline",
        "sparse_attention",
        "seq_parallel_communication_data_type",
        "timers",
        "torch_autocast",
        "compile",
        "weight_quantization",
        "hybrid_engine",
        "train_batch_size_per_gpu",
    ]
)


def _deepspeed_shaped(d: dict) -> bool:
    """A DeepSpeed config: a ZeRO section or the micro batch per GPU, or `train_batch_size` among keys that are
    mostly DeepSpeed's (kaistAI/CoT-Collection's Lightning settings JSON has `train_batch_size` and
    `gradient_accumulation_steps` among its own `model`, `ngpu`, `accelerator`: Lightning builds the DeepSpeed
    config, DeepSpeed never reads that file)."""
    keys = set(d)
    if {"zero_optimization", "train_micro_batch_size_per_gpu"} & keys:
        return True
    return "train_batch_size" in keys and 3 * len(keys & _DS_KEYS) >= 2 * len(keys)


def recognise(d: Any, fmt: str) -> str | None:
    """The stack whose config file this is, by its keys; None when no stack's shape matches."""
    if not isinstance(d, dict):
        return None
    if fmt == "toml":
        return "torchtitan" if {"job", "model", "training"} <= set(d) else None
    if fmt == "json" and _deepspeed_shaped(d):
        return "deepspeed"
    if "stage" in d and "model_name_or_path" in d:
        return "llamafactory"
    if "base_model" in d and ("datasets" in d or "pretraining_dataset" in d):  # (a pretraining config streams)
        return "axolotl"
    if "model" in d and ("train_type" in d or "rlhf_type" in d):
        return "swift"
    if "model_name_or_path" in d and {"dataset_name", "packing", "max_length", "padding_free"} & set(d):
        return "trl"
    if isinstance(d.get("train"), dict) and isinstance(d.get("model"), dict) and "micro_batch_size" in d["train"]:
        # (every section ConfigContainer's: VeOmni's own trainer YAML has `data`, which Bridge calls `dataset`)
        sections = _bridge_sections()
        if sections is None:
            return "megatron-bridge"
        from packlint.conditions.functions.bridge_config_keys import _near_section

        return "megatron-bridge" if all(_near_section(k, set(sections)) for k in set(d) - sections) else None
    if isinstance(d.get("policy"), dict) and isinstance(d.get("cluster"), dict):
        return "nemo-rl"
    return None


_SECTIONS: list[frozenset[str] | None] = []


def _bridge_sections() -> frozenset[str] | None:
    """The top-level sections of Megatron-Bridge's ConfigContainer in any snapshot release (None without them)."""
    if not _SECTIONS:
        from packlint.codebase import stack_schemas

        keys = ((stack_schemas.data() or {}).get("stacks", {}).get("megatron-bridge") or {}).get("keys")
        _SECTIONS.append(frozenset(k.split(".", 1)[0] for k in keys) if isinstance(keys, dict) and keys else None)
    return _SECTIONS[0]


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
    if stack == "trl":  # the trainer the file configures: its name or keys say (a DPO recipe is no SFT one)
        command = command.replace("TRAINER", trl_trainer(path, root.plain() if root is not None else None))
    return (command + "\n").encode(), stack


# recognise()'s shapes, by the top-level keys each needs (any one set of a shape): a directory walk parses
# only a file whose text has one of them (a checkout's YAML and JSON are mostly other things: CI jobs,
# tokenizers, datasets, test baselines), and a stack's config file is small: one over 64 KiB is not read
_SHAPES = (
    ("stage", "model_name_or_path"),
    ("base_model", "datasets"),
    ("base_model", "pretraining_dataset"),
    ("model", "train_type"),
    ("model", "rlhf_type"),
    ("model_name_or_path", "dataset_name"),
    ("model_name_or_path", "packing"),
    ("model_name_or_path", "max_length"),
    ("model_name_or_path", "padding_free"),
    ("train", "model"),
    ("policy", "cluster"),
)
_SHAPE_BYTES = tuple((a.encode(), b.encode()) for a, b in _SHAPES)  # (encoded once, not per file)
_DEEPSPEED_KEYS = (b'"zero_optimization"', b'"train_batch_size"', b'"train_micro_batch_size_per_gpu"')
_MAX_SCAN = 64 << 10


def _top_level_keys(data: bytes, fmt: str) -> set[str]:
    """The keys a YAML file sets at its top level (unindented `key:`), or every quoted key of a JSON file."""
    import re

    if fmt == "json":
        return {k.decode("ascii") for k in re.findall(rb'"([A-Za-z_][\w.-]*)"\s*:', data)}
    return {k.decode("ascii") for k in re.findall(rb"""^["']?([A-Za-z_][\w.-]*)["']?[ \t]*:""", data, re.M)}


def _may_be_stack_config(data: bytes, fmt: str) -> bool:
    if fmt == "toml":
        return all(f"[{t}]".encode() in data for t in ("job", "model", "training"))
    if fmt == "json" and any(k in data for k in _DEEPSPEED_KEYS):
        return True
    if not any(a in data and b in data for a, b in _SHAPE_BYTES):
        return False  # (substring tests before any regex)
    keys = _top_level_keys(data, fmt)
    return any(a in keys and b in keys for a, b in _SHAPES)


def is_stack_config(path: str) -> bool:
    """Whether a file found in a checked directory (or staged for the pre-commit hook) is a config file
    of a known stack by its keys, and readable: what `packlint check DIR` and the hook check besides
    scripts. Any other YAML/JSON/TOML, a broken one included, is left alone, silently."""
    if not is_config_name(path):
        return False
    from packlint.configs.files import format_of

    fmt = format_of(path)
    from packlint.safe_io import read_regular

    data = read_regular(path, _MAX_SCAN)  # (None: over 64 KiB, not a regular file, unreadable)
    if data is None:
        return False
    if not _may_be_stack_config(data, fmt):
        return False
    from packlint.configs import read_config_file

    root, err = read_config_file(path, fmt, "pyyaml", near=path)  # (a file named or walked: its own checkout)
    if err is not None or root is None:
        return False
    stack = recognise(root.plain(), fmt)
    if stack not in (None, "trl", "deepspeed") and named_only_by_other_programs(path, stack):
        # PrasannS/corpus-reasoning: `accelerate launch scripts/train/train_chunked_fast.py cfg.yml`, the checkout's
        # own trainer reading an axolotl-shaped file with yaml.safe_load: every line of the checkout that names the
        # file runs something else than the stack (judged through that launch and its program), so the stand-in
        # (`axolotl train cfg.yml`) guesses a reader the checkout contradicts
        return False
    if stack == "trl" and read_by_the_checkout(path):
        # the stand-in (`trl sft --config`) guesses the program that reads a TRL recipe; the checkout says
        # otherwise when a launch script of it names the recipe (R1-V: `accelerate launch
        # src/open_r1/sft.py --config x.yaml`, judged through that launch) or when it has a program of its
        # own that parses recipes with TrlParser (open-r1's shape; R1-VL's sft.py builds its SFTTrainer
        # with skip_prepare_dataset): the recipe is not judged as `trl sft` would read it
        return False
    return stack is not None


def _launch_file(base: str, rel: str) -> bool:
    from packlint.discover import is_launch_file

    return not rel.endswith(".py") and is_launch_file(os.path.join(base, rel))


_YAML_WORD = re.compile(rb"[\w./@+-]*[\w@+-]\.ya?ml\b")
_MAX_FILES, _MAX_LISTED, _MAX_SCRIPT_BYTES, _PY_HEAD = 4000, 50_000, 256 << 10, 32 << 10


def read_by_the_checkout(path: str) -> bool:
    """Whether the checkout's own launches read this recipe: a launch script of it names the file (its
    path, or a path ending in it), or a Python program of it (not a vendored `trl/`) uses TrlParser."""
    from packlint.codebase.resolve import checkout_root

    root = checkout_root(os.path.dirname(os.path.abspath(path)))[0]
    if root is None:
        return False
    from packlint import caches

    memo = _named_memo()  # checkout root -> (the YAML paths its scripts name, a TrlParser program) (one run)
    facts = memo.get(root) if caches.IN_RUN[0] else None
    if facts is None:
        facts = _checkout_facts(root)
        if caches.IN_RUN[0]:
            memo[root] = facts
    words, own_parser = facts
    if own_parser:
        return True
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    for word in words:
        w = word[2:] if word.startswith("./") else word
        if "/" not in w:
            if w == os.path.basename(rel):
                return True
        elif rel == w or rel.endswith("/" + w) or w.endswith("/" + rel):
            return True
    return False


_NAMED: list[dict[str, tuple[frozenset[str], bool]]] = []


# the names a line that runs a stack's own reader of its config carries (its command, module or package)
_STACK_WORDS = {
    "axolotl": ("axolotl",),
    "llamafactory": ("llamafactory", "llmtuner", "train_bash.py", "LLaMA-Factory"),
    "swift": ("swift",),
    "megatron-swift": ("swift", "megatron "),
    "verl": ("verl",),
    "xtuner": ("xtuner",),
    "openrlhf": ("openrlhf",),
    "torchtitan": ("torchtitan", "train.py", "run_train.sh"),
    "internvl": ("internvl",),
}


def named_only_by_other_programs(path: str, stack: str) -> bool:
    """A launch script line of the checkout names the file (its path, or a path ending in it), and no such line
    carries the stack's own command or package name: the checkout reads it with something else. False for a
    stack packlint has no names for, or when no line names the file."""
    names = _STACK_WORDS.get(stack)
    if not names:
        return False
    from packlint.codebase.resolve import checkout_root

    root = checkout_root(os.path.dirname(os.path.abspath(path)))[0]
    if root is None:
        return False
    from packlint import caches

    memo = _lines_memo()
    lines = memo.get(root) if caches.IN_RUN[0] else None
    if lines is None:
        lines = _naming_lines(root)
        if caches.IN_RUN[0]:
            memo[root] = lines
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    naming = [line for word, line in lines if _names(word, rel)]
    return bool(naming) and not any(n in line for line in naming for n in names)


def _names(word: str, rel: str) -> bool:
    w = word[2:] if word.startswith("./") else word
    if "/" not in w:
        return w == os.path.basename(rel)
    return rel == w or rel.endswith("/" + w) or w.endswith("/" + rel)


_LINES: list[dict[str, list[tuple[str, str]]]] = []


def _lines_memo() -> dict[str, list[tuple[str, str]]]:
    if not _LINES:
        from packlint import caches

        _LINES.append(caches.run_memo())
    return _LINES[0]


def _naming_lines(root: str) -> list[tuple[str, str]]:
    """(a YAML/JSON path a launch script names, the line naming it) over the checkout's scripts (the first _MAX_FILES
    of its listing, _MAX_SCRIPT_BYTES each; a line's backslash continuations joined, so a command's name counts)."""
    from packlint.configs.elsewhere import listed
    from packlint.safe_io import read_regular

    out: list[tuple[str, str]] = []
    for rel in [r for r in listed(root) if _launch_file(root, r)][:_MAX_FILES]:
        data = read_regular(os.path.join(root, rel), _MAX_SCRIPT_BYTES)
        if not data:
            continue
        text = data.decode("utf-8", "replace").replace("\\\n", " ")
        for line in text.splitlines():
            out.extend((m.group(0), line) for m in _CONFIG_WORD.finditer(line))
    return out


_CONFIG_WORD = re.compile(r"[\w./@+-]*[\w@+-]\.(?:ya?ml|json)\b")


def _named_memo() -> dict[str, tuple[frozenset[str], bool]]:
    if not _NAMED:
        from packlint import caches

        _NAMED.append(caches.run_memo())
    return _NAMED[0]


def _checkout_facts(root: str) -> tuple[frozenset[str], bool]:
    from packlint.discover import SKIP_DIRS
    from packlint.safe_io import read_head, read_regular

    found: set[str] = set()
    own_parser = False
    seen = listed = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not (d == root and x == "trl"))
        listed += len(files)
        if listed > _MAX_LISTED:  # (a checkout's data folders: bounded, as packlint.configs.elsewhere is)
            return frozenset(found), own_parser
        for name in sorted(files):
            is_py = name.endswith(".py")
            if not (is_py and not own_parser) and (is_py or not _launch_file(d, name)):
                continue
            seen += 1
            if seen > _MAX_FILES:
                return frozenset(found), own_parser
            if is_py:
                head = read_head(os.path.join(d, name), _PY_HEAD)
                if head and b"TrlParser" in head:
                    own_parser = True
                continue
            data = read_regular(os.path.join(d, name), _MAX_SCRIPT_BYTES)
            if data:
                found.update(m.group(0).decode("utf-8", "replace") for m in _YAML_WORD.finditer(data))
    return frozenset(found), own_parser


# keys only one TRL trainer's config has (trl/trainer/*_config.py), and the trainers by name
_TRL_KEYS = {
    "dpo": {"max_prompt_length", "precompute_ref_log_probs", "rpo_alpha", "reference_free", "ref_adapter_name",
            "ref_model_init_kwargs", "generate_during_eval", "use_weighting", "ld_alpha"},
    "grpo": {"num_generations", "reward_funcs", "reward_weights", "num_iterations", "epsilon_high"},
    "kto": {"desirable_weight", "undesirable_weight"},
    "orpo": set(),
    "reward": {"center_rewards_coefficient"},
}  # fmt: skip
_TRL_NAMED = re.compile(r"(?:^|[/_.\-])(dpo|grpo|kto|orpo|rloo|ppo|reward)(?:[/_.\-]|$)", re.I)


def trl_trainer(path: str, d: Any) -> str:
    """The TRL command a config file is for: the trainer its path names (`recipes/x/dpo/config.yaml`),
    else the one whose own keys it sets, else `sft`."""
    named = _TRL_NAMED.search(path.replace(os.sep, "/"))
    if named is not None:
        return named.group(1).lower()
    keys = set(d) if isinstance(d, dict) else set()
    for trainer, own in _TRL_KEYS.items():
        if keys & own:
            return trainer
    return "sft"


def recognise_text(path: str, text: str) -> bool:
    """Whether an editor's document (unsaved text) is a config file of a known stack."""
    from packlint.configs import set_text_override

    set_text_override(path, text.encode("utf-8", "surrogatepass"))
    return launch_for(path) is not None


KNOWN = ", ".join(sorted(COMMANDS))
