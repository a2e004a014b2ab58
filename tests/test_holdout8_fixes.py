"""Mechanisms the eighth holdout found (issue 26), each in its repository's shape.

ZJLab-DataHub-Security/concerto (a Pai-Megatron-Patch derivative) runs on a PAI/Kubernetes platform that sets
`WORLD_SIZE` (the node count) and the GPUs per node: `NNODES=${WORLD_SIZE:-1}`. A direct `torchrun --nnodes
$NNODES` gave no finding (the world size rests on the cluster's variable: at most an info); once the value went
through a string (`DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES"`, `--nnodes=$NNODES`, or
`cmd="torchrun ${ARGS[@]} ..."; eval $cmd`) the fallback lost its premise and PK301 said "the world size 8 is not
divisible by 48" as an error. Each part of a joined value now keeps its own origin (a "marked" value): split again,
`1` is the cluster's and `8` the script's."""

from __future__ import annotations

from pathlib import Path

import pytest

from packlint.api import inspect_script
from tests.check_helpers import check_findings, write_tree

MEGATRON = "/workspace/Megatron-LM/pretrain_gpt.py"
FLAGS = "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 12 --num-layers 96 --micro-batch-size 1"

SHAPES = {
    "string": (
        "NNODES=${WORLD_SIZE:-1}\nGPUS_PER_NODE=8\n"
        'DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank ${RANK:-0}"\n'
        f"torchrun $DISTRIBUTED_ARGS {MEGATRON} {FLAGS}\n"
    ),
    "equals": f"NNODES=${{WORLD_SIZE:-1}}\ntorchrun --nproc_per_node 8 --nnodes=$NNODES {MEGATRON} {FLAGS}\n",
    "eval": (
        "NNODES=${WORLD_SIZE:-1}\nGPUS_PER_NODE=${KUBERNETES_CONTAINER_RESOURCE_GPU:-8}\n"
        "DISTRIBUTED_ARGS=(--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES)\n"
        f'cmd="torchrun ${{DISTRIBUTED_ARGS[@]}} {MEGATRON} {FLAGS}"\neval $cmd\n'
    ),
    "eval_with_an_unset_part": (  # (concerto's qwen3_cpt.sh: `... 2>&1 | tee ${LOG_FILE}`, the log dir never set)
        "NNODES=${WORLD_SIZE:-1}\n"
        'DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes $NNODES"\n'
        f'run_cmd="torchrun $DISTRIBUTED_ARGS {MEGATRON} {FLAGS} --log ${{LOG_DIR}}/train.log"\neval ${{run_cmd}}\n'
    ),
    "eval_string": (
        "NNODES=${WORLD_SIZE:-1}\n"
        'DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes $NNODES"\n'
        f'eval "torchrun $DISTRIBUTED_ARGS {MEGATRON} {FLAGS}"\n'
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_cluster_fallback_keeps_its_premise_through_a_string(shape: str, tmp_path: Path, capsys) -> None:
    root = write_tree(tmp_path, {".git/HEAD": "", "run.sh": "#!/bin/bash\n" + SHAPES[shape]})
    pk301 = [f for f in check_findings(capsys, root / "run.sh") if f["code"] == "PK301"]
    assert all(f["severity"] == "info" for f in pk301), pk301
    model = inspect_script(str(root / "run.sh"))
    (launch,) = model["launches"]
    nnodes = launch["launcher_flags"]["--nnodes"][-1]
    assert nnodes["value"] == "1" and nnodes["evidence"]["kind"] == "machine", nnodes
    nproc = launch["launcher_flags"]["--nproc_per_node"][-1]
    if shape != "eval":  # (there the per-node count is the platform's too)
        assert nproc["value"] == "8" and "evidence" not in nproc, nproc


def test_the_script_s_own_node_count_in_a_string_is_still_a_verdict(tmp_path: Path, capsys) -> None:
    """The control: NNODES=1 written by the script, the rank the cluster's: the world size is the script's."""
    text = (
        "#!/bin/bash\nNNODES=1\n"
        'DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes $NNODES --node_rank ${RANK:-0}"\n'
        f"torchrun $DISTRIBUTED_ARGS {MEGATRON} {FLAGS}\n"
    )
    root = write_tree(tmp_path, {".git/HEAD": "", "run.sh": text})
    (f,) = [f for f in check_findings(capsys, root / "run.sh") if f["code"] == "PK301"]
    assert f["severity"] == "error" and "world size 8" in f["message"], f


def test_split_fields_keep_only_their_own_part_s_origin() -> None:
    from packlint.interpret.words import Piece, assemble_fields, join_pieces
    from packlint.values import Span

    span = Span("x.sh", 1, 1, 1, 2)
    joined = join_pieces([Piece("--a 8 --n "), Piece("1", origin="cluster-default:WORLD_SIZE"), Piece(" --b x")], span)
    fields = assemble_fields([Piece(joined.text, split=True, span=span, origin=joined.origin)], span)
    assert [(f.text, f.origin) for f in fields] == [
        ("--a", None),
        ("8", None),
        ("--n", None),
        ("1", "cluster-default:WORLD_SIZE"),
        ("--b", None),
        ("x", None),
    ]


# --- a parser that registers its flags from its own argv (open-instruct's update_command_args.py) ---------------

_UPDATE_COMMAND_ARGS = """\
import argparse
import sys


def main():
    parser = argparse.ArgumentParser()
    last_arg = None
    nargs = "+"
    for i in range(2, len(sys.argv)):
        if sys.argv[i].startswith("--"):
            if last_arg is not None:
                parser.add_argument(f"--{last_arg}", nargs=nargs)
            last_arg = sys.argv[i].lstrip("-")
    if last_arg is not None:
        parser.add_argument(f"--{last_arg}", nargs=nargs)
    args = parser.parse_args(sys.argv[2:])
    print(sys.argv[1], vars(args))


if __name__ == "__main__":
    main()
"""


def test_flags_a_parser_makes_from_its_own_argv_are_not_judged(tmp_path: Path, capsys) -> None:
    """gatmiry/top-k-finetuning and hadasah/open-instruct-fts scripts/train/benchmark.sh (88 false PK201 each): the
    loop sets `last_arg`, so after it `last_arg is not None` is undecided, not the None it started as."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "update_command_args.py": _UPDATE_COMMAND_ARGS,
            "scripts/train/benchmark.sh": (
                "#!/bin/bash\npython update_command_args.py scripts/train/tulu3/finetune_8b.sh \\\n"
                "    --cluster ai2/augusta --priority normal --image costah/open_instruct | uv run bash\n"
            ),
        },
    )
    assert [f for f in check_findings(capsys, root) if f["code"] == "PK201"] == []


def test_a_constant_an_if_may_replace_is_not_folded() -> None:
    import ast

    from packlint.codebase.argparse_reader.interpreter import _fold, _merge_envs
    from packlint.codebase.argparse_reader.values import UNKNOWN, V

    env: dict = {}
    _merge_envs(env, {"x": UNKNOWN}, {"x": V("const", None)})
    assert _fold(ast.parse("x is not None").body[0].value, env) is None
    env = {}
    _merge_envs(env, {"x": V("const", None)}, {"x": V("const", None)})
    assert _fold(ast.parse("x is not None").body[0].value, env) is False


# --- the working directory after successive relative `cd`s (zengxyyu/HiCI) -------------------------------------


@pytest.mark.parametrize(
    "cds",
    [
        'LONGCHAT_DIR="./LongChat"\ncd "$LONGCHAT_DIR"\ncd longeval\n',
        "cd LongChat\ncd longeval\n",
        "cd LongChat/longeval\n",
        'D=LongChat\nif [ ! -d "$D" ]; then\n  exit 1\nfi\ncd "${D}" && cd longeval\n',
    ],
)
def test_relative_cds_compose(cds: str, tmp_path: Path, capsys) -> None:
    gen = "import argparse\np = argparse.ArgumentParser()\n{}p.parse_args()\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "eval.py": gen.format("p.add_argument('--batch_size')\n"),
            "LongChat/longeval/eval.py": gen.format("p.add_argument('--task')\np.add_argument('--num_gpus')\n"),
            "eval_topic.sh": f"#!/bin/bash\n{cds}python3 eval.py --task topics --num_gpus 2 --max_gpu_memry 40 &\n",
        },
    )
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK201"]
    assert [f["message"].split()[0] for f in found] == ["--max_gpu_memry"], found
    assert "LongChat/longeval/eval.py" in found[0]["message"], found


def test_a_pin_older_than_every_snapshot_is_named_not_called_unsaid(tmp_path: Path, capsys) -> None:
    """dongyh20/Chain-of-Spot pins transformers==4.31.0 in pyproject.toml; the snapshots start later. The warning's
    premise said "the checkout does not say which"; it names the pin now."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "pyproject.toml": '[project]\nname = "llava"\nversion = "1.1.3"\n'
            'dependencies = ["torch==2.0.1", "transformers==4.31.0"]\n',
            "llava/train/train_mem.py": "from transformers import HfArgumentParser, TrainingArguments\n\n"
            "HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n",
            "scripts/finetune_lora.sh": "#!/bin/bash\ndeepspeed llava/train/train_mem.py --output_dir o "
            "--mm_projector_lr 2e-5\n",
        },
    )
    (f,) = [f for f in check_findings(capsys, root) if f["code"] == "PK201"]
    assert f["severity"] == "warning", f
    assert "transformers 4.31.0, which the checkout pins" in f["message"], f["message"]
    assert "does not say which" not in f["message"], f["message"]


# --- a flag's value from a variable the script never sets (namhkoh/gelab-env's worker scripts) ------------------


def test_a_stack_flag_given_a_variable_the_script_never_sets_is_not_judged(tmp_path: Path, capsys) -> None:
    """gui_scripts/worker_script_grpo.sh reads its settings from the variables its launcher exports: `swift rlhf
    --rlhf_type "$RLHF_TYPE" --torch_dtype "$TORCH_DTYPE" ...`. The values are the environment's, unknown here;
    PK208 judged them as '' (50 false findings). A fallback the script writes is still judged, on its premise."""
    worker = (
        "#!/bin/bash\n# This script reads configuration from environment variables set by the launcher\n"
        'swift rlhf --rlhf_type "$RLHF_TYPE" --model "$MODEL" --dataset "$DATASET" --torch_dtype "$TORCH_DTYPE" \\\n'
        '    --max_completion_length "$MAX_COMPLETION_LENGTH" --num_train_epochs "$EPOCHS"\n'
    )
    fallback = '#!/bin/bash\nDT=${1:-bfloat61}\nswift sft --model m --dataset d --torch_dtype "$DT"\n'
    root = write_tree(tmp_path, {".git/HEAD": "", "worker_script_grpo.sh": worker, "sft.sh": fallback})
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK208"]
    assert [(f["path"].rsplit("/", 1)[-1], f["severity"]) for f in found] == [("sft.sh", "warning")], found
    assert "the script run without arguments" in found[0]["message"], found[0]["message"]


# --- a callee's parameter overriding its shared base arguments (princeton-nlp/LESS and its derivatives) ----------

_LESS_BASE = """\
#!/bin/bash
ID=$RANDOM
export header="torchrun --nproc_per_node 1 --nnodes 1 --rdzv-id=$ID --rdzv_backend c10d -m less.train.train"
export base_training_args="--do_train True \\
--max_seq_length 2048 \\
--percentage 1.0 \\
--save_strategy no \\
--save_strategy epoch \\
--bf16 True"
"""

_LESS_TRAIN = """\
#!/bin/bash
source less/scripts/train/base_training_args.sh
data_dir=$1
model_path=$2
percentage=$3
data_seed=$4
training_args="$base_training_args \\
--model_name_or_path $model_path \\
--output_dir ../out \\
--percentage $percentage \\
--data_seed $data_seed \\
--train_files ${data_dir}/train/processed/flan_v2/flan_v2_data.jsonl"
eval "$header" "$training_args"
"""


_LESS_PROGRAM = """\
from dataclasses import dataclass, field

from transformers import HfArgumentParser, TrainingArguments


@dataclass
class DataArguments:
    train_files: str = field(default=None)
    percentage: float = field(default=1.0)
    data_seed: int = 42
    max_seq_length: int = 2048


@dataclass
class ModelArguments:
    model_name_or_path: str = None


HfArgumentParser((ModelArguments, DataArguments, TrainingArguments)).parse_args_into_dataclasses()
"""


def test_a_callee_s_parameter_overrides_its_base_arguments_on_purpose(tmp_path: Path, capsys, monkeypatch) -> None:
    """experiment_scripts/warmup.sh runs warmup_lora_train.sh with PERCENTAGE=0.05 as $3; the callee's
    `--percentage $percentage` after the sourced base's `--percentage 1.0` is its parameter, given on purpose (PK103
    said "given 2 times"). The base's own repeat (`--save_strategy no` then `epoch`) stays a finding."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "less/scripts/train/base_training_args.sh": _LESS_BASE,
            "less/scripts/train/warmup_lora_train.sh": _LESS_TRAIN,
            "less/__init__.py": "",
            "less/train/__init__.py": "",
            "less/train/train.py": _LESS_PROGRAM,
            "experiment_scripts/warmup.sh": (
                "#!/bin/bash\nPERCENTAGE=0.05\n"
                './less/scripts/train/warmup_lora_train.sh ../data meta-llama/Llama-2-7b-hf "$PERCENTAGE" 3\n'
            ),
        },
    )
    monkeypatch.chdir(root)  # (the experiments run from the checkout's root: `./less/scripts/...`)
    found = [f for f in check_findings(capsys, Path("experiment_scripts/warmup.sh")) if f["code"] == "PK103"]
    assert [f["message"].split()[0] for f in found] == ["--save_strategy"], found


# --- sizes resting on positional defaults and on a parser packlint did not read ---------------------------------

_POSITIONAL = (
    "#!/bin/bash\nGPUS_PER_NODE=${1:-8}\nMICRO_BATCH_SIZE=${2:-4}\nGLOBAL_BATCH_SIZE=${3:-4}\n"
    'CMD="torchrun --nproc_per_node $GPUS_PER_NODE /workspace/Megatron-LM/pretrain_gpt.py '
    '--micro-batch-size $MICRO_BATCH_SIZE --global-batch-size $GLOBAL_BATCH_SIZE --num-layers 2"\n'
)


@pytest.mark.parametrize("tail", ['CMD+=" --fp16 "\n$CMD\n', "$CMD\n"])
def test_a_command_string_keeps_its_values_premises(tail: str, tmp_path: Path, capsys) -> None:
    """Oneflow-Inc/OneAutoTest args_mt5.sh: `CMD="... $T5_ARGS ..."; CMD+=" --fp16 "; $CMD` with sizes from positional
    defaults. The append dropped every premise (PK302 an error); and the world size from `--nproc_per_node ${1:-8}`
    never carried its premise to the data-parallel size."""
    root = write_tree(tmp_path, {".git/HEAD": "", "args.sh": _POSITIONAL + tail})
    (f,) = [f for f in check_findings(capsys, root / "args.sh") if f["code"] == "PK302"]
    assert f["severity"] == "warning", f
    assert all(f"${n} is unset" in f["message"] for n in (1, 2, 3)), f["message"]


def test_parallel_defaults_of_a_parser_not_in_the_checkout_are_unknown(tmp_path: Path, capsys) -> None:
    """zzhx1/Hetaceso-ModelLink (Aceso's flexpipe fork): pretrain_gpt.py imports a Megatron the checkout does not hold
    (PK206) and takes its layout from `--flexpipe-config`; TP/PP/CP are no flag of the launch. Their defaults are the
    unread parser's: unknown, so PK302 is undecided (an info), not an error under upstream's TP 1."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "pretrain_gpt.py": "from megatron.training.arguments import flex_config_from_args\n"
            "from megatron.training import pretrain\n\npretrain(None, None, None)\n",
            "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --micro-batch-size 1 "
            "--global-batch-size 4 --num-layers 2 --flexpipe-config test_pretrain.json\n",
        },
    )
    (f,) = [f for f in check_findings(capsys, root / "run.sh") if f["code"] == "PK302"]
    assert f["severity"] == "info" and "parser, whose default decides, is not in the checkout" in f["message"], f


def test_a_partly_unknown_command_string_keeps_its_parts_origins(tmp_path: Path, capsys, monkeypatch) -> None:
    """fclio/reproducibility-of-less: the same callee with `--output_dir $output_dir` from an unknown caller value, so
    the eval'd string is partly unknown; its known parts keep their origins (the caller's `$3`), and the repeat in the
    sourced base names where the script runs for bash to find that file: the checkout's root (not "its own
    directory", from which `source less/scripts/...` finds nothing)."""
    callee = _LESS_TRAIN.replace("--output_dir ../out", "--output_dir $output_dir").replace(
        "data_seed=$4\n", "data_seed=$4\noutput_dir=$5\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "less/scripts/train/base_training_args.sh": _LESS_BASE,
            "less/scripts/train/warmup_lora_train.sh": callee,
            "less/__init__.py": "",
            "less/train/__init__.py": "",
            "less/train/train.py": _LESS_PROGRAM,
            "experiment_scripts/warmup.sh": (
                "#!/bin/bash\nPERCENTAGE=0.05\nOUTPUT_DIR=${LESS_OUTPUT_DIR}/out/run\n"
                'bash less/scripts/train/warmup_lora_train.sh data m "$PERCENTAGE" 3 "$OUTPUT_DIR"\n'
            ),
        },
    )
    monkeypatch.chdir(root)
    found = [f for f in check_findings(capsys, Path(".")) if f["code"] == "PK103"]
    assert [f["message"].split()[0] for f in found] == ["--save_strategy"], found  # (once: the two runs agree)
    assert "the script run from the checkout's root" in found[0]["message"], found[0]["message"]


def test_a_cd_to_another_machine_s_folder_is_a_premise_of_the_program_found_here(tmp_path: Path, capsys) -> None:
    """HaoranLuo/text2sql-grpo: `BASE=/gpfs/work/.../reasoning_generator_3b; cd $BASE; $PY src/orm_selection_v2.py
    --score-shard $SHARD $NSHARDS`: the checkout's src/orm_selection_v2.py stands for the cluster folder's, a premise
    (as `python $BASE/src/x.py` names it), so PK202 is a warning naming it."""
    prog = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--score-shard')\np.parse_args()\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "src/orm_selection_v2.py": prog,
            "run.sh": "#!/bin/bash\nBASE=/gpfs/work/someone/reasoning_generator_3b\ncd $BASE\n"
            "python src/orm_selection_v2.py --score-shard 0 4\n",
            "here.sh": "#!/bin/bash\npython src/orm_selection_v2.py --score-shard 0 4\n",
            # (the same inside a remote or `-c` command string: `$H 'cd /gpfs/...` then the program on its own line)
            "remote.sh": "#!/bin/bash\nbash -c 'cd /gpfs/work/someone/reasoning_generator_3b\n"
            "python src/orm_selection_v2.py --score-shard 0 4'\n",
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK202"}
    assert found["run.sh"]["severity"] == "warning", found["run.sh"]
    assert "a folder outside the checkout" in found["run.sh"]["message"], found["run.sh"]["message"]
    assert found["here.sh"]["severity"] == "error", found["here.sh"]
    assert found["remote.sh"]["severity"] == "warning", found["remote.sh"]


# --- a value set inside an undecided branch over the one given before it (verl's run_ppo_trainer_megatron.sh) -----

_VERL_DEVICE = """\
#!/bin/bash
common_params=(
    data.train_batch_size=256
    global_profiler.tool=nsys
    trainer.total_epochs=2
)
device_name=$(python3 - <<EOF
from verl.utils.device import get_device_name
print(get_device_name())
EOF
)
if [ -n "$device_name" ] && [ "$device_name" == "cuda" ]; then
    python3 -m verl.trainer.main_ppo "${common_params[@]}" trainer.n_gpus_per_node=8
elif [ -n "$device_name" ] && [ "$device_name" == "npu" ]; then
    python3 -m verl.trainer.main_ppo \\
        "${common_params[@]}" \\
        trainer.n_gpus_per_node=16 \\
        global_profiler.tool=npu \\
        trainer.total_epochs=3 trainer.total_epochs=4
fi
"""


def test_a_branch_s_own_value_over_the_common_one_is_no_repeat(tmp_path: Path, capsys) -> None:
    """JetAstra/PI-Mem (verl 0.8.0.dev): the npu branch's `global_profiler.tool=npu` over the common array's `nsys` is
    the branch's own setting; a key the branch itself gives twice with different values is still a repeat."""
    root = write_tree(tmp_path, {".git/HEAD": "", "run_ppo_trainer_megatron.sh": _VERL_DEVICE})
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK103"]
    assert [f["message"].split()[0] for f in found] == ["trainer.total_epochs"], found
