"""Megatron/DeepSpeed-side mechanisms behind false findings of the fourth and fifth holdouts (issue 26;
/work logs h-holdout-f/g/h/j), each in the shape the real repository uses."""

from __future__ import annotations

import json

from packlint.cli import main


def _check_json(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    main(["check", "--isolated", "--format", "json", "--exit-zero", "--no-cache", *argv])
    return json.loads(capsys.readouterr().out)["findings"]


_FALCON_PROGRAM = """\
from nemo_fork.falcon_module import FalconModel
from nemo_fork.hydra_runner import hydra_runner


@hydra_runner(config_path="conf", config_name="megatron_falcon_config")
def main(cfg):
    FalconModel(cfg.model)


if __name__ == "__main__":
    main()
"""

_HYDRA_RUNNER = """\
import hydra


def hydra_runner(config_path=None, config_name=None):
    def decorator(task_function):
        return hydra.main(config_path=config_path, config_name=config_name, version_base=None)(task_function)

    return decorator
"""

_FALCON_MODULE = """\
{import_line}
class FalconModel:
    def __init__(self, cfg):
        world_size = cfg.tensor_model_parallel_size
        # class TransformerConfig: (a comment names it; the code does not)
        self.num_attention_heads_per_partition = round(cfg.num_attention_heads / world_size)
"""

_TEST_FALCON = """\
#!/usr/bin/env bash
: ${TP:=8}
: ${N_AH:=71}
torchrun --nproc_per_node 8 megatron_falcon_pretraining.py --config-path=conf --config-name=megatron_falcon_config \\
    model.micro_batch_size=1 model.global_batch_size=256 model.tensor_model_parallel_size=$TP \\
    model.pipeline_model_parallel_size=1 model.num_layers=32 model.hidden_size=4544 model.num_attention_heads=$N_AH
"""


def test_heads_check_needs_code_that_builds_transformer_config(tmp_path, capsys):
    """aws-neuron/neuronx-nemo-megatron nemo/examples/nlp/language_modeling/test_falcon.sh:26: 71 heads on TP 8
    through NeMo 1 Hydra keys (model.num_attention_heads, model.tensor_model_parallel_size). The launched program
    and its whole import closure are in the checkout (a NeMo fork) and none of it names megatron-core's
    TransformerConfig: its Falcon module splits the heads with round(), so upstream's __post_init__ check is not
    the code that runs (a false PK303 error). Where the model code imports TransformerConfig it stands."""
    for uses in (False, True):
        root = tmp_path / ("mcore" if uses else "fork")
        (root / ".git").mkdir(parents=True)
        (root / "nemo_fork").mkdir()
        (root / "nemo_fork" / "__init__.py").write_text("")
        (root / "nemo_fork" / "hydra_runner.py").write_text(_HYDRA_RUNNER)
        line = "from megatron.core.transformer.transformer_config import TransformerConfig\n" if uses else ""
        (root / "nemo_fork" / "falcon_module.py").write_text(_FALCON_MODULE.format(import_line=line))
        examples = root / "examples"
        (examples / "conf").mkdir(parents=True)
        (examples / "conf" / "megatron_falcon_config.yaml").write_text("model:\n  micro_batch_size: 1\n")
        (examples / "megatron_falcon_pretraining.py").write_text(_FALCON_PROGRAM)
        (examples / "test_falcon.sh").write_text(_TEST_FALCON)
        codes = [f["code"] for f in _check_json(capsys, str(examples / "test_falcon.sh"))]
        assert ("PK303" in codes) == uses, (uses, codes)


def test_crlf_message_names_words_of_the_file(tmp_path, capsys):
    """IEIT-Yuan/Yuan2.0-M32 vllm/*.sh, TimeChat metrics/*/eval_*.sh (CRLF): PK904's example words were a fixed
    `(OFFLINE_PACKED_DATA='1\\r', train.py\\r)`, words of no such file. They are the last words of the file's own
    first command lines; a secret-like assignment's value is never shown."""
    (tmp_path / ".git").mkdir()
    script = tmp_path / "eval_dvc.sh"
    script.write_bytes(
        b"#!/bin/bash\r\n# evaluate\r\nexport HF_TOKEN=hf_do_not_print\r\ncd metrics\r\n"
        b"python eval.py \\\r\n  --pred out.json\r\n"
    )
    (msg,) = [f["message"] for f in _check_json(capsys, str(script)) if f["code"] == "PK904"]
    assert "(HF_TOKEN=...\\r, metrics\\r)" in msg, msg
    assert "hf_do_not_print" not in msg and "OFFLINE_PACKED_DATA" not in msg, msg


_PREPROCESS = """\
import argparse


def get_args():
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group(title="input data")
    group.add_argument("--input", type=str, required=True)
    group = parser.add_argument_group(title="tokenizer")
    group.add_argument("--vocab-file", type=str, default=None)
    group.add_argument("--vocab-size", default=786)
    group.add_argument("--output-prefix", type=str, required=True)
    return parser.parse_args()


if __name__ == "__main__":
    get_args()
"""

_TEST_PREPROCESS = """\
#!/bin/bash
IMPL=cached
python ../preprocess_data.py \\
       --input test_samples.json \\
       --vocab vocab.txt \\
       --output-prefix test_samples_${IMPL}
"""


def _preprocess_tree(root, program_at: str):
    (root / ".git").mkdir(parents=True)
    (root / program_at).parent.mkdir(parents=True, exist_ok=True)
    (root / program_at).write_text(_PREPROCESS)
    script = root / "megatron" / "data" / "test" / "test_preprocess_data.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(_TEST_PREPROCESS)
    return script


def test_a_climbing_program_found_elsewhere_rests_on_the_working_directory(tmp_path, capsys):
    """ramanathanlab/Megatron-DeepSpeed megatron/data/test/test_preprocess_data.sh:6: `python ../preprocess_data.py`
    from megatron/data/test names megatron/data/preprocess_data.py, which moved to the root. The root's file of that
    name was taken as the program with evidence "checkout" (an error); it is found only if the job starts in another
    directory: a machine premise (info) that names it. Where the path names the file from the script's own
    directory, it is as written: the error stands."""
    moved = _check_json(capsys, str(_preprocess_tree(tmp_path / "moved", "preprocess_data.py")))
    (f,) = [f for f in moved if f["code"] == "PK201"]
    assert f["severity"] == "info", f
    assert "../preprocess_data.py from the script's own directory is not in the checkout" in f["message"], f
    kept = _check_json(capsys, str(_preprocess_tree(tmp_path / "kept", "megatron/data/preprocess_data.py")))
    assert [f["severity"] for f in kept if f["code"] == "PK201"] == ["error"], kept


def test_an_ambiguous_prefix_is_reported_as_argparse_reports_it(tmp_path, capsys):
    """The same script: with argparse's abbreviations on (its default), `--vocab` is a prefix of --vocab-file and
    --vocab-size, so argparse exits with "ambiguous option: --vocab could match --vocab-file, --vocab-size" (python
    3.11, checked), not "unrecognized arguments"; a plain `python` run stops at startup."""
    kept = _check_json(capsys, str(_preprocess_tree(tmp_path, "megatron/data/preprocess_data.py")))
    (f,) = [f for f in kept if f["code"] == "PK201"]
    assert (
        "argparse exits with 'ambiguous option: --vocab could match --vocab-file, --vocab-size' at startup"
        in f["message"]
    ), f


_HF_PROGRAM = """\
from dataclasses import dataclass, field

from transformers import HfArgumentParser, Seq2SeqTrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default=None)


def main():
    parser = HfArgumentParser((ModelArguments, Seq2SeqTrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    main()
"""


def test_a_plain_python_run_stops_at_startup_not_after_nodes(tmp_path, capsys):
    """huggingface/distil-whisper training/flax scripts: PK201 under the assumed transformers release (a warning)
    said the run stops "after the job got its nodes" of a local `python` run; it stops at startup. Under a
    distributed launcher run locally it stops at startup too (4D-LLM's `torchrun --nproc_per_node 4`); on nodes a job
    got (srun, a multi-node launcher option) it stops after the queue wait."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "run_pl.py").write_text(_HF_PROGRAM)
    for launch, when in (
        ("python", "at startup"),
        ("torchrun --nproc_per_node 8", "at startup"),
        ("srun torchrun --nproc_per_node 8", "after the job got its nodes"),
        ("torchrun --nnodes 2 --node_rank $RANK --nproc_per_node 8", "after the job got its nodes"),
    ):
        script = tmp_path / "run.sh"
        script.write_text(f"#!/bin/bash\n{launch} run_pl.py --model_name_or_path m --wandb_dir /tmp --output_dir o\n")
        (f,) = [f for f in _check_json(capsys, str(script)) if f["code"] == "PK201"]
        assert (
            f["severity"] == "warning"
            and f"used by the HfArgumentParser: ['--wandb_dir', ...]' {when} (" in f["message"]
        ), (launch, f)


_SFT_CFG = """\
### model
model_name_or_path: Qwen/Qwen2-VL-7B-Instruct
### method
stage: sft
do_train: true
finetuning_type: full
deepspeed: examples/deepspeed/ds_z0_config.json
### dataset
dataset: pubtabnet
template: qwen2_vl
output_dir: saves/qwen2_vl-7b/full/sft
"""

_CLONE_README = """\
# Fine-tune Qwen2-VL with LLaMA-Factory

```
git clone --depth 1 https://github.com/hiyouga/LLaMA-Factory.git
```
copy the `train_configs` folder into LLaMA-Factory and run

```
cd LLaMA-Factory
FORCE_TORCHRUN=1 llamafactory-cli train ./train_configs/qwen2_vl_7b_sft_cfg.yaml
```
"""


def test_a_file_of_the_stacks_clone_made_at_set_up_is_the_machines(tmp_path, capsys):
    """cuiIRISA/finetune-qwen2-vl-7b-LLaMA-Factory train_configs/qwen2_vl_7b_sft_cfg.yaml:14: `deepspeed:
    examples/deepspeed/ds_z0_config.json` is a file of LLaMA-Factory's own repository; the README clones it and runs
    `llamafactory-cli train` inside the clone (`cd LLaMA-Factory`). The file is there when the job runs in that
    directory, the machine's: PK601 is an info naming it. Without such a README, or in a checkout that is
    LLaMA-Factory itself (src/llamafactory/), the missing file stays a warning."""
    for case, want in (("clone", "info"), ("clone-only", "info"), ("plain", "warning"), ("fork", "warning")):
        root = tmp_path / case
        (root / ".git").mkdir(parents=True)
        (root / "train_configs").mkdir()
        (root / "train_configs" / "qwen2_vl_7b_sft_cfg.yaml").write_text(_SFT_CFG)
        (root / "submit_train_singlenode.sh").write_text(
            "#!/bin/bash\n#SBATCH --nodes=1\nsrun --export=ALL llamafactory-cli train ./train_configs/qwen2_vl_7b_sft_cfg.yaml\n"
        )
        if case == "clone-only":  # (the clone command alone says it: the job runs in LLaMA-Factory/)
            (root / "README.md").write_text("git clone -b v0.9.1 https://github.com/hiyouga/LLaMA-Factory.git\n")
        elif case != "plain":
            (root / "README.md").write_text(_CLONE_README)
        if case == "fork":
            (root / "src" / "llamafactory").mkdir(parents=True)
            (root / "src" / "llamafactory" / "__init__.py").write_text("")
        found = [f for f in _check_json(capsys, str(root)) if f["code"] == "PK601"]
        assert [f["severity"] for f in found] == [want], (case, found)
        if case == "clone":
            assert "runs the stack in LLaMA-Factory/ (`cd LLaMA-Factory`)" in found[0]["message"], found


_EVALUATE = """\
import argparse


def override_args(args, override_args, skip_keys, skip_if_specified_keys):
    for k, v in vars(override_args).items():
        if k in skip_keys:
            continue
        if k in skip_if_specified_keys and getattr(args, k) is not None:
            continue
        setattr(args, k, v)


def load_ds_checkpoint_and_setup_megatron(args):
    cp_args = argparse.Namespace(seq_length=2048, num_layers=24)
    override_args(args, cp_args, ["micro_batch_size"], ["vocab_file"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", type=str)
    parser.add_argument("--seq-length", type=int)
    parser.add_argument("--num-layers", type=int)
    parser.add_argument("--micro-batch-size", type=int)
    args = parser.parse_args()
{tail}

if __name__ == "__main__":
    main()
"""

_EVALHARNESS = """\
#!/bin/bash
#SBATCH --nodes=1
CHECKPOINT_PATH=checkpoints/tr11/global_step1000
SEQ_LEN=2048
# dummy arguments to make megatron happy.
MEGATRON_REQUIRED_ARGS=" \\
    --num-layers -1 \\
    --seq-length -1 \\
    "
CMD="./tasks/eval_harness/evaluate.py  \\
    --load $CHECKPOINT_PATH \\
    --micro-batch-size 1 \\
    --seq-length $SEQ_LEN \\
    $MEGATRON_REQUIRED_ARGS \\
    "
deepspeed --num_gpus 1 $CMD
"""


def test_a_repeat_the_program_replaces_from_elsewhere_is_an_info(tmp_path, capsys):
    """malteos/bigscience-Megatron-DeepSpeed-oxw and janEbert/Megatron-DeepSpeed examples/run_evalharness_*.slurm:
    `--seq-length $SEQ_LEN` then the documented dummy `--seq-length -1`; tasks/eval_harness/evaluate.py's
    override_args sets every argument of the checkpoint's (but a skip list) over the parsed ones, so neither value
    is used: PK103 is an info naming the replacement. A program that keeps what it parsed gets the warning."""
    for replaces, want in ((True, "info"), (False, "warning")):
        root = tmp_path / ("replaces" if replaces else "keeps")
        (root / ".git").mkdir(parents=True)
        (root / "tasks" / "eval_harness").mkdir(parents=True)
        tail = "    load_ds_checkpoint_and_setup_megatron(args)\n" if replaces else "    print(args.seq_length)\n"
        (root / "tasks" / "eval_harness" / "evaluate.py").write_text(_EVALUATE.format(tail=tail))
        (root / "examples").mkdir()
        (root / "examples" / "run_evalharness_deepspeed.slurm").write_text(_EVALHARNESS)
        if not replaces:  # (the loop is gone: nothing replaces the parsed arguments)
            src = root / "tasks" / "eval_harness" / "evaluate.py"
            src.write_text(src.read_text().replace("        setattr(args, k, v)\n", "        print(k, v)\n"))
        found = [f for f in _check_json(capsys, str(root / "examples")) if f["code"] == "PK103"]
        assert [(f["severity"], f["message"].split(" ")[0]) for f in found] == [(want, "--seq-length")], found
        if replaces:
            assert "another namespace (tasks/eval_harness/evaluate.py:10)" in found[0]["message"], found


def test_a_megatron_fork_without_transformer_config_keeps_the_heads_check(tmp_path, capsys):
    """bigscience-workshop's Megatron-DeepSpeed (malteos/bigscience-Megatron-DeepSpeed-oxw): no TransformerConfig
    anywhere, but its top-level megatron package splits the heads with mpu.divide, which asserts on heads % TP. The
    closure holding a top-level megatron package keeps PK303 (a NeMo subpackage named megatron does not count)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "megatron" / "model").mkdir(parents=True)
    (tmp_path / "megatron" / "__init__.py").write_text("")
    (tmp_path / "megatron" / "model" / "__init__.py").write_text("from .transformer import ParallelAttention\n")
    (tmp_path / "megatron" / "model" / "transformer.py").write_text(
        "def divide(a, b):\n    assert a % b == 0, '{} is not divisible by {}'.format(a, b)\n    return a // b\n\n\n"
        "class ParallelAttention:\n    def __init__(self, heads, world_size):\n"
        "        self.num_attention_heads_per_partition = divide(heads, world_size)\n"
    )
    (tmp_path / "pretrain_gpt.py").write_text(
        "from megatron.model import ParallelAttention\n\nParallelAttention(71, 8)\n"
    )
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 32 \\\n"
        "  --hidden-size 4544 --num-attention-heads 71 --seq-length 2048 --max-position-embeddings 2048 \\\n"
        "  --micro-batch-size 1 --global-batch-size 8\n"
    )
    assert "PK303" in [f["code"] for f in _check_json(capsys, str(script))]


def test_retired_megatron_argument_wording_follows_the_launch(tmp_path, capsys):
    """PK324's "(AssertionError at startup, after the nodes are allocated)" was said of a plain `python` run too
    (no scheduler, no nodes): it depends on the launch now."""
    flags = (
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --micro-batch-size 1 --global-batch-size 8 "
        "--seq-length 128 --max-position-embeddings 128 --model-parallel-size 1"
    )
    for i, (launch, when) in enumerate(
        (
            ("python", "(AssertionError at startup)"),
            ("torchrun --nproc_per_node 8", "(AssertionError at startup)"),
            ("srun torchrun --nproc_per_node 8", "(AssertionError at startup, after the job got its nodes)"),
        )
    ):
        (tmp_path / str(i) / ".git").mkdir(parents=True)
        script = tmp_path / str(i) / "run.sh"
        script.write_text(f"#!/bin/bash\n{launch} pretrain_gpt.py {flags}\n")
        (f,) = [f for f in _check_json(capsys, str(script)) if f["code"] == "PK324"]
        assert f"validate_args asserts it is not given {when}" in f["message"], (launch, f)
