"""The evidence model (issue 26, packlint/evidence.py): values carry how they are known, the conditions
record what a rule read as its premises, and the engine (not each rule) caps a finding's severity by
them: an assumption caps at warning and the message names it; the machine caps at info."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from packlint import evidence
from packlint.cli import main

# a rule that reads one flag: fires on --lr 0, as an error
LR_RULE = """
[[rule]]
code = "XX901"
name = "lr-zero"
severity = "error"
summary = "s"
when = "flag('--lr') == '0'"
message = "the learning rate is 0"
report_at = "flag:--lr"
explanation = "x"

[[rule]]
code = "XX902"
name = "lr-zero-or-warmup"
severity = "error"
summary = "s"
when = "has_flag('--warmup') or flag('--lr') == '0'"
message = "warm-up, or a learning rate of 0"
report_at = "launch"
explanation = "x"
"""


def check(capsys, tmp_path: Path, script: str, *options: str, args: tuple[str, ...] = ()) -> list[dict]:
    path = tmp_path / "train.sh"
    path.write_text(textwrap.dedent(script))
    (tmp_path / ".git").mkdir(exist_ok=True)
    capsys.readouterr()
    main(["check", "--format", "json", *options, str(path), *(("--", *args) if args else ())])
    return json.loads(capsys.readouterr().out)["findings"]


def inspect(capsys, tmp_path: Path, script: str, *args: str) -> dict:
    path = tmp_path / "run.sh"
    path.write_text(textwrap.dedent(script))
    capsys.readouterr()
    assert main(["inspect", "--format", "json", str(path), *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_cap_basis_suffix():
    arg = (evidence.ASSUMED, "the script run without arguments, so $2 is unset")
    arg3 = (evidence.ASSUMED, "the script run without arguments, so $3 is unset")
    path = (evidence.MACHINE, "`activate` has no slash, so bash looks it up in PATH")
    assert evidence.cap("error", ()) == "error" and evidence.basis(()) == "checkout"
    assert evidence.cap("error", (arg,)) == "warning" and evidence.cap("info", (arg,)) == "info"
    assert evidence.cap("warning", (path,)) == "info" and evidence.basis((arg, path)) == "machine"
    said = " (assuming the script run without arguments, so $2 is unset and $3 is unset)"
    assert evidence.suffix((arg, arg3)) == said
    assert "depends on the machine: `activate`" in evidence.suffix((path,))


def test_a_finding_on_an_assumed_value_is_capped_and_names_the_assumption(capsys, tmp_path):
    (tmp_path / "rules.toml").write_text(LR_RULE)
    found = check(
        capsys,
        tmp_path,
        """\
        LR=${1:-0}
        python train.py --lr $LR
        python train.py --lr 0
        """,
        "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX901",
    )  # fmt: skip
    by_line = {f["line"]: f for f in found}
    assumed = by_line[2]
    assert assumed["severity"] == "warning" and assumed["evidence"] == "assumed"
    assert assumed["premises"] == [{"kind": "assumed", "because": "the script run without arguments, so $1 is unset"}]
    assert assumed["message"].endswith("(assuming the script run without arguments, so $1 is unset)")
    known = by_line[3]
    assert known["severity"] == "error" and known["evidence"] == "checkout" and known["premises"] == []


def test_arguments_given_make_the_value_known(capsys, tmp_path):
    (tmp_path / "rules.toml").write_text(LR_RULE)
    found = check(
        capsys, tmp_path, "python train.py --lr ${1:-1}\n", "--rule-file", str(tmp_path / "rules.toml"),
        "--select", "XX901", args=("0",),
    )  # fmt: skip
    assert [(f["severity"], f["evidence"]) for f in found] == [("error", "checkout")]


def test_premises_survive_memoised_values_and_drop_an_undecisive_or_side(capsys, tmp_path):
    """Both rules read flag('--lr') (memoised once per variant): both get its premise. Where the
    `or` is decided by its left side (--warmup given), what the right side read is no premise."""
    (tmp_path / "rules.toml").write_text(LR_RULE)
    found = check(
        capsys,
        tmp_path,
        """\
        python train.py --lr ${2:-0}
        python train.py --lr ${2:-0} --warmup 10
        """,
        "--rule-file", str(tmp_path / "rules.toml"),
    )  # fmt: skip
    got = sorted((f["code"], f["line"], f["severity"]) for f in found)
    assert got == [("XX901", 1, "warning"), ("XX901", 2, "warning"), ("XX902", 1, "warning"), ("XX902", 2, "error")]


def test_function_arguments_are_no_assumption(capsys, tmp_path):
    model = inspect(
        capsys,
        tmp_path,
        """\
        run() { python train.py --lr "$1" --tag "$2"; }
        run 0
        """,
    )
    flags = model["launches"][0]["flags"]
    assert flags["--lr"][0]["value"] == "0" and "evidence" not in flags["--lr"][0]
    assert flags["--tag"][0]["value"] == "" and "evidence" not in flags["--tag"][0]


def test_three_expansion_word_is_one_word(capsys, tmp_path):
    """tree-sitter-bash splits `$D/$S/$NAME` in two nodes; bash gives one word (`d/sp/` with $2 empty)."""
    model = inspect(
        capsys,
        tmp_path,
        """\
        D=d
        S=sp
        NAME=$2
        OUT=./eval/$S/$D/merge.jsonl
        ALL=a/$S/$D/$NAME/z
        python train.py --a $D/$S/$NAME --b $D/$S/$NAME/x --c $D/$S --d x$D/$S/${NAME}y --e $OUT --f $ALL
        """,
    )
    flags = model["launches"][0]["flags"]
    # run without arguments, `$2` is the caller's word: unknown, never taken as empty
    assert "value" not in flags["--a"][0] and "$2 is the caller's argument" in flags["--a"][0]["unknown"]
    assert flags["--c"][0]["value"] == "d/sp" and flags["--e"][0]["value"] == "./eval/sp/d/merge.jsonl"
    model = inspect(capsys, tmp_path, (tmp_path / "run.sh").read_text(), "--", "first", "")
    flags = model["launches"][0]["flags"]
    got = [flags[k][0]["value"] for k in ("--a", "--b", "--c", "--d", "--e", "--f")]
    # (bash, given an empty $2: the same words; an assignment's value split the same way: BAAI-DCAI/Bunny
    # script/eval/full/gqa.sh)
    assert got == ["d/sp/", "d/sp//x", "d/sp", "xd/sp/y", "./eval/sp/d/merge.jsonl", "a/sp/d//z"]


def test_substring_expansion_is_no_default(capsys, tmp_path):
    script = 'X=${4:500}\nY=${4:1}\nZ=${1:2:3}\npython t.py --x "$X" --y "$Y" --z "$Z"\n'
    flags = inspect(capsys, tmp_path, script, "--", "abcdef", "b", "c", "0123456789")["launches"][0]["flags"]
    assert [flags[k][0]["value"] for k in ("--x", "--y", "--z")] == ["", "123456789", "cde"]
    flags = inspect(capsys, tmp_path, script)["launches"][0]["flags"]
    assert all("value" not in flags[k][0] for k in ("--x", "--y", "--z"))  # the caller's words: unknown


def test_a_path_under_a_variable_the_script_never_sets_is_unknown(capsys, tmp_path):
    model = inspect(
        capsys,
        tmp_path,
        """\
        ROOT=$SCRATCH
        python train.py --config $SCRATCH/configs/a.yaml --data ${WORK}/data --out $ROOT/out --tag "$UNSET"
        """,
    )
    flags = model["launches"][0]["flags"]
    for name, tail in (("--config", "configs/a.yaml"), ("--data", "data"), ("--out", "out")):
        assert "value" not in flags[name][0], name
        assert flags[name][0]["unknown"].endswith(f"tail={tail}")
    assert flags["--tag"][0]["value"] == "" and flags["--tag"][0]["evidence"]["kind"] == "assumed"


def test_source_without_a_slash_depends_on_the_machine(capsys, tmp_path):
    model = inspect(capsys, tmp_path, "source activate myenv\npython train.py\n")
    diag = next(d for d in model["diagnostics"] if d["code"] == "source-not-found")
    assert diag["evidence"]["kind"] == "machine" and "PATH" in diag["evidence"]["because"]


def test_sarif_carries_evidence_and_premises(capsys, tmp_path):
    (tmp_path / "rules.toml").write_text(LR_RULE)
    script = tmp_path / "train.sh"
    script.write_text("python train.py --lr ${1:-0}\n")
    capsys.readouterr()
    main(["check", "--format", "sarif", "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX901", str(script)])
    result = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
    assert result["level"] == "warning"
    assert result["properties"]["evidence"] == "assumed"
    assert result["properties"]["premises"][0]["because"].startswith("the script run without arguments")


SFT_KEYS = "model_name_or_path: org/model\ndataset_name: org/data\npadding_free: true\nmax_length: 512\n"


@pytest.mark.parametrize(
    ("path", "extra", "fires"),
    [
        ("recipes/zephyr-7b/sft/config_full.yaml", "", True),
        ("recipes/zephyr-7b/dpo/config_full.yaml", "beta: 0.01\n", False),  # alignment-handbook's shape
        ("configs/preference.yaml", "beta: 0.1\nmax_prompt_length: 256\n", False),  # DPOConfig's own keys
        ("configs/grpo_math.yaml", "num_generations: 8\n", False),
    ],
)
def test_trl_rules_check_the_trainer_the_config_is_for(capsys, tmp_path, path, extra, fires):
    target = tmp_path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(SFT_KEYS + extra)
    (tmp_path / ".git").mkdir(exist_ok=True)
    capsys.readouterr()
    main(["check", "--format", "json", "--select", "PK413", str(target)])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert bool(found) == fires


def test_trl_dpo_launch_is_not_checked_against_sft_rules(capsys, tmp_path):
    (tmp_path / "dpo.yaml").write_text(SFT_KEYS)
    (tmp_path / "sft.yaml").write_text(SFT_KEYS)
    found = check(capsys, tmp_path, "trl dpo --config dpo.yaml\ntrl sft --config sft.yaml\n", "--select", "PK413")
    assert [f["path"].rsplit("/", 1)[-1] for f in found] == ["sft.yaml"]


def test_packlint_limits_are_infos(capsys, tmp_path):
    loops = " ".join(str(i) for i in range(40))
    script = f'L="{loops}"\nfor a in $L; do for b in $L; do for c in $L; do : "$a$b$c"; done; done; done\n'
    found = check(capsys, tmp_path, script + "torchrun train.py --micro-batch-size 1\n", "--select", "PK902")
    assert [(f["code"], f["severity"]) for f in found] == [("PK902", "info")]


def test_bash_differential_findings(capsys, tmp_path):
    """Disagreements the bash differential found (tools/bash_differential.py), fixed in the mechanism:
    `export A=$X--$Y--$Z` split by tree-sitter after a `$` (LLaVA-VL/LLaVA-NeXT scripts/archived), and
    `$(( ${WORLD_SIZE} / 8 ))` with the variable empty, which bash does not read as 0
    (alibaba/Pai-Megatron-Patch toolkits/auto_configurator/run_auto_config.sh)."""
    model = inspect(
        capsys,
        tmp_path,
        """\
        P=proj
        M=vicuna
        export WANDB_NAME=$P--$M--$D
        NNODES=$(( ${WORLD_SIZE} / 8 ))
        GPUS=$(( 16 / 8 ))
        python train.py --nnodes "$NNODES" --gpus $GPUS
        """,
    )
    launch = model["launches"][0]
    assert launch["env"]["WANDB_NAME"]["value"] == "proj--vicuna--"
    assert "unknown" in launch["flags"]["--nnodes"][0] and launch["flags"]["--gpus"][0]["value"] == "2"


def test_an_escaped_blank_before_a_comment_is_a_word(capsys, tmp_path):
    """verl examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh: `reweight_method=pow \\  # [...]` ends the
    command with the word ` ` (bash), which tree-sitter-bash leaves out (the bash differential found it)."""
    model = inspect(capsys, tmp_path, "python3 -m verl.trainer.main_ppo a=1 \\  # note\n    b=2\n")
    assert model["launches"][0]["command"] == ["python3", "-m", "verl.trainer.main_ppo", "a=1", " "]


_BENCHMARK = """import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--model", type=str)
parser.add_argument("--deployment_name", type=str)
parser.add_argument("--backend", type=str, default="fastgen")
args = parser.parse_args()
"""


@pytest.mark.parametrize("stdin", ["", " < prompts.txt"])
def test_a_placeholder_read_as_a_redirection_makes_the_command_the_machines(capsys, tmp_path, stdin):
    """DeepSpeedExamples' run_aml.sh: `--model <model name> \\` (a placeholder). bash opens `<model` before it runs
    the command, so the command runs only if a file `model` exists where the script starts: what its words
    give is an info naming that. A redirection from a file the checkout holds changes nothing."""
    (tmp_path / "run_benchmark.py").write_text(_BENCHMARK)
    (tmp_path / "prompts.txt").write_text("hello\n")
    placeholder = not stdin
    line = "--model <model name> \\\n        --deployment_name <aml deployment name> \\\n" if placeholder else "--model a b \\\n"
    findings = check(
        capsys,
        tmp_path,
        f"# Run benchmark against AML endpoint\npython ./run_benchmark.py \\\n        {line}        --backend aml{stdin}\n",
        "--no-cache",
    )
    pk202 = [f for f in findings if f["code"] == "PK202"]
    assert len(pk202) == 1, findings
    if placeholder:
        assert pk202[0]["severity"] == "info" and pk202[0]["evidence"] == "machine"
        assert "the command runs only if `model` exists where the script starts" in pk202[0]["message"]
    else:
        assert pk202[0]["severity"] == "error" and pk202[0]["evidence"] == "checkout"


def test_a_program_found_only_by_the_end_of_its_path_rests_on_the_machine(capsys, tmp_path):
    """krafton-ai/Megatron-Dion: `examples/detxoify_lm/finetune_gpt.py` moved to
    `examples/academic_paper_scripts/detxoify_lm/`; the script still names the old path. Its flags are judged
    against the moved file, but whether that is what runs depends on the machine: an info naming it."""
    moved = tmp_path / "examples" / "academic_paper_scripts" / "detxoify_lm"
    moved.mkdir(parents=True)
    (moved / "finetune_gpt.py").write_text(_BENCHMARK)
    (tmp_path / ".git").mkdir(exist_ok=True)
    script = moved / "finetune.sh"
    for program, severity, kind, extra in (
        ("examples/detxoify_lm/finetune_gpt.py", "info", "machine", ""),
        ("examples/academic_paper_scripts/detxoify_lm/finetune_gpt.py", "error", "checkout", ""),
        # another rule reading the schema first (the sizes' unknown-word test, NVIDIA/Megatron-LM's script with
        # `$4` and friends) must not take the premise with it: the flag rule still rests on the machine
        ("examples/detxoify_lm/finetune_gpt.py", "info", "machine", " --micro-batch-size 1 --global-batch-size $4 $EXTRA"),
    ):
        script.write_text(f"#!/bin/bash\npython {program} --model m --bogus 1{extra}\n")
        capsys.readouterr()
        main(["check", "--format", "json", "--no-cache", str(script)])
        found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "PK201"]
        assert found and {(f["severity"], f["evidence"]) for f in found} == {(severity, kind)}, found
        if kind == "machine":
            assert "the path as written, examples/detxoify_lm/finetune_gpt.py, is not in the checkout" in found[0]["message"]


@pytest.mark.parametrize("own_loop", [True, False])
def test_a_program_with_its_own_trainer_gets_no_hf_trainer_mismatch(capsys, tmp_path, own_loop):
    """OpenLMLab/LOMO: `deepspeed src/train_lomo.py config/args_lomo.yaml` parses TrainingArguments with
    HfArgumentParser, then trains with its own `LOMOTrainer` (no transformers base), which calls
    `deepspeed.initialize` itself: transformers' DeepSpeed/TrainingArguments mismatch check never runs (PK611).
    The same program building `transformers.Trainer` keeps the finding."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    src = tmp_path / "src"
    src.mkdir()
    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}\n')
    trainer = (
        "import deepspeed\n\n\nclass LOMOTrainer:\n    def __init__(self, model, args):\n"
        "        self.engine, _, _, _ = deepspeed.initialize(model=model, config=args.deepspeed)\n"
        if own_loop
        else "from transformers import Trainer\n\n\nclass LOMOTrainer(Trainer):\n    pass\n"
    )
    (src / "lomo_trainer.py").write_text(trainer)
    (src / "train_lomo.py").write_text(
        "import sys\nfrom transformers import HfArgumentParser, TrainingArguments\nfrom lomo_trainer import LOMOTrainer\n\n"
        "if __name__ == '__main__':\n    (args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
        "    LOMOTrainer(None, args)\n"
    )
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\ndeepspeed --num_gpus 1 src/train_lomo.py --deepspeed ds_config.json "
        "--per_device_train_batch_size 16 --output_dir out\n"
    )
    capsys.readouterr()
    main(["check", "--format", "json", "--no-cache", str(script)])
    codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert ("PK611" in codes) is not own_loop, codes


def test_a_variable_an_unfollowable_source_may_set_is_unknown(capsys, tmp_path):
    """haeggee/Megatron-LM `examples/post_training/modelopt/quantize.sh`: `source conf/${MLM_MODEL_CFG}.sh` (the model
    named by the caller) sets MODEL_ARGS, which carries `--save-interval`; packlint cannot follow that source, so a
    variable the script itself never sets is unknown after it, not empty (PK316 '--save without --save-interval'
    was reported on 10 such launches)."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "llama.sh").write_text('MODEL_ARGS="--num-layers 32 --save-interval 100000"\n')
    script = """\
        MLM_MODEL_CFG=$1
        source "conf/${MLM_MODEL_CFG}.sh"
        torchrun --nproc_per_node 8 pretrain_gpt.py ${MODEL_ARGS} --save ckpt --tag "$UNSET_AFTER"
        """
    model = inspect(capsys, tmp_path, script)
    (launch,) = model["launches"]
    assert "may be set by the `source` at line 2" in json.dumps(launch["argv"])
    assert "value" not in launch["flags"]["--tag"][0]
    # with the model named, the source is followed and the words are known
    model = inspect(capsys, tmp_path, script, "--", "llama")
    assert "--save-interval" in model["launches"][0]["flags"]
