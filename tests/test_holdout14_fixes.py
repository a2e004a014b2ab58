"""Mechanisms the fourteenth holdout (on 0.3.6) found, each in its repository's shape:

- jdchawla29/reinforcesight's `scripts/train_grpo.sh` sets `DEEPSPEED_CONFIG=...` and passes `--deepspeed` with it only
  `if [ -f "$DEEPSPEED_CONFIG" ]`: PK601 said the file is missing "only when `[ -f ... ]` is true", which is exactly
  when it exists. A file the script gives only where its own test found it cannot fail the launch.
- jvonrad/XScript-Pretraining pins each job to its cores with `NEURON_RT_VISIBLE_CORES=...` (AWS Neuron's runtime,
  libnrt.so, reads it natively): PK203 said "no module of the code it runs reads it: setting it does nothing".
- Edenzzzz/Megatron-LM (zero-bubble branch) runs `torchrun ... ${DIR}/pretrain_gpt.py` with DIR=`pwd` and the fork's
  `--allow-padding-num-layers`, a flag close to upstream's `--cpu-offloading-num-layers`: with the program's path
  unknown, no snapshot checks the flags (PK201 is silent), so the near name was neither reported as a typo nor taken
  as a fork's flag, and PK308 judged upstream's validate_args.

Its second part (on the fixed tree, repositories nobody had read):

- duterscmy/JustGRPO runs `accelerate launch /lus/.../dllm/dllm/pipelines/llada/eval.py --tasks ... --model llada`
  (another project's lm-eval entry point on the author's machine): packlint took the checkout's top-level eval.py
  for it by the file name alone and said 6 flags are not the program's (warnings, "assuming" the mapping). Only the
  name matching, and the folder above it not named as the checkout, the mapping is the machine's (info).
- duterscmy/JustGRPO's bwd_verifier/exp_backward_digits.sh runs `python exp_backward_digits.py $input $output` (the
  program beside the script) with `input=data/...json; output=data/...json`, results an earlier job writes there:
  PK601 warned because an unrelated data/ package at the root made "a folder made at set-up" false; the launch runs
  in bwd_verifier/, where data/ is not.
- YYKKWW/SSO_test (Megatron-LM's experimental verl scripts) passes `"actor@actor_rollout_ref.actor=mlite_actor"`
  and then `actor_rollout_ref.actor.optim.lr_warmup_init=0`: PK207 said Hydra stops (error), though the chosen
  option's defaults bring that key (verl's megatron optim). Keys under a package a group option is put at are that
  option's.
- The same checkout's upstream examples: PK202 named HfArgumentParser's error for a flag Megatron's
  ArgumentGroupFactory made from a dataclass onto a plain argparse parser (whose error is argparse's).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.check_helpers import GIT, argparse_program, check_findings, git, hf_program, write_tree


def test_a_config_given_only_where_the_script_found_it_is_not_missing(tmp_path: Path, capsys) -> None:
    ds = 'DS="configs/ds_zero2.json"\n'
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "src/train.py": hf_program(),
            "scripts/opt.sh": ds + 'OPT=""\nif [ -f "$DS" ]; then\n    OPT="--deepspeed $DS"\nfi\n'
            "python src/train.py --output_dir out $OPT\n",
            "scripts/inside.sh": ds
            + 'if [[ -e "$DS" ]]; then\n  python src/train.py --output_dir o --deepspeed "$DS"\nfi\n',
            "scripts/and.sh": ds + '[ -f "$DS" ] && python src/train.py --output_dir out --deepspeed "$DS"\n',
            # the fallback is given when the first is absent: that one is still reported
            "scripts/fallback.sh": ds + 'if [ ! -f "$DS" ]; then\n    DS="configs/other.json"\nfi\n'
            'python src/train.py --output_dir out --deepspeed "$DS"\n',
            # a test of another file guards nothing
            "scripts/other.sh": ds
            + 'if [ -f "x.json" ]; then\n  python src/train.py --output_dir o --deepspeed "$DS"\nfi\n',
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["message"].split(" is not found")[0].rsplit(" ", 1)[-1])
        for f in check_findings(capsys, root / "scripts")
        if f["code"] == "PK601"
    )
    assert found == [("fallback.sh", "configs/other.json"), ("other.sh", "configs/ds_zero2.json")]


@pytest.mark.skipif(GIT is None, reason="git is needed for the history")
def test_neuron_runtime_variables_are_read_natively(tmp_path: Path, capsys) -> None:
    # PK203 speaks of a name the history's code once read: both names were read by old.py, deleted since
    root = tmp_path / "XScript-Pretraining"
    old = "import os\ncores = os.environ.get('NEURON_RT_VISIBLE_CORES')\nmine = os.environ.get('MY_OWN_SETTING')\n"
    write_tree(root, {"old.py": old})
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "old")):
        git(root, *args)
    (root / "old.py").unlink()
    write_tree(
        root,
        {
            "run.py": "import argparse\nimport torch_xla.core.xla_model as xm\np = argparse.ArgumentParser()\n"
            "p.add_argument('--device', default='xla')\na = p.parse_args()\ndev = xm.xla_device()\n",
            "fan.sh": "#!/bin/bash\nNEURON_RT_VISIBLE_CORES=0-1 python run.py --device xla &\n"
            "MY_OWN_SETTING=1 python run.py --device xla\n",
        },
    )
    for args in (("add", "-A"), ("commit", "-q", "-m", "new")):
        git(root, *args)
    found = [f["message"].split(" ", 1)[0] for f in check_findings(capsys, root / "fan.sh") if f["code"] == "PK203"]
    assert found == ["MY_OWN_SETTING"]


_ZB = (
    '#!/bin/bash\nDIR=`pwd`\noptions=" \\\n  --pipeline-model-parallel-size 4 \\\n  --num-layers 14 \\\n'
    "  --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 \\\n"
    '  --micro-batch-size 1 --global-batch-size 12 --train-iters 10 --lr 1e-4 {extra}"\n'
    "torchrun --nproc_per_node=4 ${{DIR}}/pretrain_gpt.py ${{options}}\n"
)


def test_a_near_upstream_flag_no_snapshot_checks_is_a_fork_s(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "zb.sh": _ZB.format(extra="\\\n  --allow-padding-num-layers"),
            "plain.sh": _ZB.format(extra=""),
            # the program path known: a near name is PK201's typo, and upstream's checks stay
            "known.sh": _ZB.format(extra="\\\n  --allow-padding-num-layers").replace("${DIR}/", ""),
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, root) if f["code"] != "PK905"
    )
    assert found == [
        ("known.sh", "PK201"),
        ("known.sh", "PK308"),
        ("plain.sh", "PK308"),
        ("zb.sh", "PK206"),
    ], found


def test_an_absolute_path_matched_by_its_file_name_alone_is_the_machine_s(tmp_path: Path, capsys) -> None:
    parser = argparse_program("--task")
    root = write_tree(
        tmp_path / "JustGRPO",
        {
            ".git/HEAD": "",
            "eval.py": parser,
            "other.sh": "accelerate launch --num_processes 1 /lus/u/dllm/pipelines/llada/eval.py \\\n  --tasks gsm8k\n",
            # the folder above the file named as the checkout: still an assumption (a warning)
            "own.sh": "accelerate launch --num_processes 1 /home/me/JustGRPO/eval.py --tasks gsm8k\n",
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK201"}
    assert {k: f["severity"] for k, f in found.items()} == {"other.sh": "info", "own.sh": "warning"}
    assert "only the file names match" in found["other.sh"]["message"]


def test_relative_paths_of_a_program_run_beside_its_script(tmp_path: Path, capsys) -> None:
    program = (
        "import argparse, json\np = argparse.ArgumentParser()\np.add_argument('input_file')\n"
        "p.add_argument('output_file')\np.add_argument('--verbose', action='store_true')\n"
        "a = p.parse_args()\njson.load(open(a.input_file))\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "data/__init__.py": "",  # an unrelated package at the root
            "bwd_verifier/exp.py": program,
            "bwd_verifier/exp.sh": "input=data/r.v1.json; output=data/r.v1.checked.json\n"
            "python exp.py $input $output --verbose\n",
            # one file alone under the absent folder, read by a program with no parser from sys.argv[1]: an input
            # like an argparse positional's (test_holdout16_fixes), made at set-up (the seventeenth holdout's
            # thunlp/CSS-LM: test_holdout17_fixes); a name that marks a config stays a warning
            "bwd_verifier/raw.py": "import json, sys\njson.load(open(sys.argv[1]))\n",
            "bwd_verifier/lone.sh": "python raw.py data/r.v1.json out.json --verbose\n",
            "bwd_verifier/conf.sh": "python raw.py data/r.v1_config.json out.json --verbose\n",
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f["severity"] for f in check_findings(capsys, root) if f["code"] == "PK601"}
    assert found == {"exp.sh": "info", "lone.sh": "info", "conf.sh": "warning"}


def test_keys_under_a_package_a_group_option_is_put_at_are_the_option_s(tmp_path: Path, capsys) -> None:
    run = (
        "python3 -m verl.trainer.main_ppo \\\n  {group}"
        '"actor_rollout_ref.actor.optim.lr_warmup_init=0" \\\n  "actor_rollout_ref.rollout.tensor_parallel_sizee=2"\n'
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "requirements.txt": "verl==0.8.0\n",
            "chosen.sh": run.format(group='"actor@actor_rollout_ref.actor=megatron_actor" \\\n  '),
            "plain.sh": run.format(group=""),
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["message"].split()[0])
        for f in check_findings(capsys, root)
        if f["code"] == "PK207"
    )
    assert found == [
        ("chosen.sh", "actor_rollout_ref.rollout.tensor_parallel_sizee"),
        ("plain.sh", "actor_rollout_ref.actor.optim.lr_warmup_init"),
        ("plain.sh", "actor_rollout_ref.rollout.tensor_parallel_sizee"),
    ], found


def test_a_flag_megatron_s_factory_made_fails_with_argparse_s_words(tmp_path: Path, capsys) -> None:
    root = tmp_path / "fork"
    shutil.copytree(Path(__file__).parent / "fixtures" / "codebase" / "megatron_like", root)
    write_tree(
        root,
        {
            ".git/HEAD": "",
            "t.sh": "A=(--num-layers 2 3 --hidden-size 8)\ntorchrun --nproc_per_node 1 pretrain_gpt.py ${A[@]}\n",
        },
    )
    (found,) = [f for f in check_findings(capsys, root / "t.sh") if f["code"] == "PK202"]
    assert "argparse exits with 'unrecognized arguments: 3'" in found["message"], found["message"]
    assert "HfArgumentParser" not in found["message"]


def test_the_script_s_directory_through_readlink_or_realpath(tmp_path: Path, capsys) -> None:
    # Megatron-LM's post_training/modelopt/validate.sh: `SCRIPT_DIR="$(dirname "$(readlink -f "$0")")"`, then
    # `python ${SCRIPT_DIR}/validate.py`: the program beside the script, not an unknown one
    parser = argparse_program("--a")
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "sub/v.py": parser,
            "sub/run.sh": 'D="$(dirname "$(readlink -f "$0")")"\npython ${D}/v.py --b 1\n'
            'E=$(cd "$(dirname "$(realpath "${BASH_SOURCE[0]}")")" && pwd)\npython $E/v.py --c 1\n'
            'cd "$(dirname "$(readlink -f "$0")")"\npython v.py --d 1\n',
        },
    )
    found = [
        (f["line"], f["severity"]) for f in check_findings(capsys, root / "sub" / "run.sh") if f["code"] == "PK201"
    ]
    assert found == [(2, "error"), (4, "error"), (6, "error")], found


_AXO = (
    "base_model: Qwen/Qwen2.5-0.5B\ndatasets:\n  - path: data/train.jsonl\n    type: alpaca\nadapter: lora\nlora_r: 8\n"
    "micro_batch_size: 1\nnum_epochs: 1\nlearning_rate: 0.0002\n{extra}: before\n"
)


def test_an_axolotl_shaped_file_the_checkout_s_own_trainer_reads(tmp_path: Path, capsys) -> None:
    # PrasannS/corpus-reasoning: its own train_chunked_fast.py reads axolotl-shaped YAMLs (`yaml.safe_load`, then
    # `cfg.get("query_position")`), some named on its launch lines, others generated and launched through $CONFIG
    own = "import sys, yaml\ncfg = yaml.safe_load(open(sys.argv[1]))\nq = cfg.get('query_position', 'after')\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "scripts/train/train_chunked.py": own,
            "configs/chunked.yml": _AXO.format(extra="query_position"),
            "configs/generated.yml": _AXO.format(extra="query_position"),
            "configs/typo.yml": _AXO.format(extra="lora_dropuot"),
            "configs/axo.yml": _AXO.format(extra="lora_dropuot"),
            "run_chunked.sh": "accelerate launch --num_processes 2 scripts/train/train_chunked.py "
            "configs/chunked.yml\n",
            "run_axo.sh": "accelerate launch -m axolotl.cli.train configs/axo.yml\n",
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["message"].split()[0])
        for f in check_findings(capsys, root)
        if f["code"] == "PK207"
    )
    # the launch of the checkout's trainer: nothing; its file on its own: not axolotl's; a generated file whose
    # custom key the checkout's code reads by name: not judged; a key nobody reads stays (alone and through axolotl)
    assert found == [("axo.yml", "lora_dropuot"), ("typo.yml", "lora_dropuot")], found


def test_a_lost_export_s_value_is_quoted_whole(tmp_path: Path, capsys) -> None:
    # longmalongma/TW-GRPO: `export LOG_PATH=$PRIVATE_DATA_ROOT/$RUN/debug.log` (tree-sitter-bash ends the assignment
    # at `$PRIVATE_DATA_ROOT/$`): the message quoted '$PRIVATE_DATA_ROOT/$'
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": "print(1)\n",
            "run.sh": "export R=root\nexport P=proj\nexport LOG_PATH=$R/$P/debug.log\nexport LOG_PATH=$R/debug.log\n"
            "python train.py\n",
        },
    )
    (found,) = [f for f in check_findings(capsys, root / "run.sh") if f["code"] == "PK105"]
    assert "its value '$R/$P/debug.log' exported at line 3 is lost" in found["message"], found["message"]


def _history_of(root: Path, old: dict[str, str], now: dict[str, str]) -> None:
    """A checkout whose first commit had `old` (a module reading the names), deleted in the second, which adds `now`."""
    write_tree(root, old)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "old")):
        git(root, *args)
    for rel in old:
        (root / rel).unlink()
    write_tree(root, now)
    for args in (("add", "-A"), ("commit", "-q", "-m", "now")):
        git(root, *args)


@pytest.mark.skipif(GIT is None, reason="git is needed for the history")
def test_a_variable_a_config_file_interpolates_is_read(tmp_path: Path, capsys) -> None:
    # ljy-gh/Pai-Megatron-Patch (alibaba's ChatLearn GRPO scripts): `export patch_tokenizer_type=Qwen2Tokenizer`, then
    # `python train.py -c configs/grpo.yaml`, whose base.yaml has `${patch_tokenizer_type:NullTokenizer}`
    old = "import os\na = os.environ['patch_tokenizer_type']\nb = os.environ['MY_DEAD']\n"
    now = {
        "train.py": "import sys\nprint(sys.argv)\n",
        "configs/base.yaml": "tokenizer: ${patch_tokenizer_type:NullTokenizer}\n",
        "run.sh": "export patch_tokenizer_type=Qwen2Tokenizer\nexport MY_DEAD=1\n"
        "python train.py -c configs/base.yaml\n",
    }
    root = tmp_path / "Pai-Megatron-Patch"
    _history_of(root, {"old.py": old}, now)
    found = [f["message"].split()[0] for f in check_findings(capsys, root / "run.sh") if f["code"] == "PK203"]
    assert found == ["MY_DEAD"], found


@pytest.mark.skipif(GIT is None, reason="git is needed for the history")
def test_a_variable_a_sibling_sub_project_reads_is_read(tmp_path: Path, capsys) -> None:
    # OpenGVLab/VKnowU: src/r1-v's grpo program imports qwen_vl_utils, vendored as the src-layout sub-project
    # src/qwen-vl-utils/src/qwen_vl_utils (installed by its setup.sh), whose vision_process.py reads QWENVL_EVAL
    old = "import os\na = os.environ.get('QWENVL_EVAL')\nb = os.environ.get('MY_DEAD')\n"
    now = {
        "src/app/setup.py": "from setuptools import setup\nsetup(name='app')\n",
        "src/app/src/open_r1/train.py": "import vutils\nprint(vutils)\n",
        "src/vutils/pyproject.toml": "[project]\nname = 'vutils'\n",
        "src/vutils/src/vutils/__init__.py": "import os\nEVAL = os.environ.get('QWENVL_EVAL', 'False')\n",
        "src/scripts/run.sh": "export QWENVL_EVAL=False\nexport MY_DEAD=1\ncd src/app\npython src/open_r1/train.py\n",
    }
    root = tmp_path / "VKnowU"
    _history_of(root, {"src/app/src/open_r1/old.py": old}, now)
    found = [
        f["message"].split()[0]
        for f in check_findings(capsys, root / "src" / "scripts" / "run.sh")
        if f["code"] == "PK203"
    ]
    # the sub-project's package is the checkout's, not read by packlint: whatever it reads is undecided
    assert found == [], found


def test_a_fish_script_named_sh_is_not_bash_s(tmp_path: Path, capsys) -> None:
    # kenziyuliu/lora-fairness: fish launch scripts (`for seed in ...` / `end`) named *.sh, without a shebang: PK900
    # said bash cannot parse them (an error); they are fish's, not analysed (as a tcsh shebang already was)
    main = argparse_program("--seed")
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "main.py": main,
            "eval.sh": "for seed in 13 42\n    python main.py --seed $seed --bogus 1\nend\n",
            # a bash script without a shebang is still bash's
            "bash.sh": "for seed in 13 42; do\n    python main.py --seed $seed --bogus 1\ndone\n",
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, root) if f["severity"] != "info"
    )
    assert found == [("bash.sh", "PK201")], found


def test_disagreeing_pins_decide_no_release(tmp_path: Path, capsys) -> None:
    # wshiman/Action-R1: src/r1-v/setup.py pins trl 0.14.0, the root's requirements.txt (a freeze of the author's
    # environment) trl 0.16.1; PK201 said `--epsilon` is not in 0.14.0 (an error, "checkout") on the nearest pin alone
    grpo = (
        "from dataclasses import dataclass\nfrom trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser\n\n\n"
        "@dataclass\nclass A(ScriptArguments):\n    max_pixels: int = 1\n\n\n"
        "TrlParser((A, GRPOConfig, ModelConfig)).parse_args_and_config()\n"
    )
    setup = "from setuptools import setup\nsetup(name='r1-v', install_requires=['trl==0.14.0'])\n"
    run = "cd src/r1-v\ntorchrun --nproc_per_node=2 src/open_r1/grpo.py --output_dir o --epsilon 0.2 --bogus_flag 1\n"
    for freeze in ("trl==0.16.1\n", "trl==0.14.0\n"):
        root = write_tree(
            tmp_path / freeze.strip(),
            {
                ".git/HEAD": "",
                "requirements.txt": freeze,
                "src/r1-v/setup.py": setup,
                "src/r1-v/src/open_r1/grpo.py": grpo,
                "run.sh": run,
            },
        )
        found = sorted(f["message"].split()[0] for f in check_findings(capsys, root / "run.sh") if f["code"] == "PK201")
        # (the pins agree: --epsilon is not in trl 0.14.0; they disagree: only the flag of no release stays)
        assert found == (["--bogus_flag"] if freeze == "trl==0.16.1\n" else ["--bogus_flag", "--epsilon"]), found


# ---------------------------------------------------------------- the fourth and fifth parts


def test_a_trainer_s_own_yaml_with_model_and_train_is_not_bridge_s(tmp_path: Path, capsys) -> None:
    # ByteDance-Seed/VeOmni: `model:`, `data:`, `train:` (micro_batch_size) of its own trainer; Bridge's is `dataset`
    own = "model:\n  model_path: m\ndata:\n  train_path: d\ntrain:\n  micro_batch_size: 1\n"
    bridge = "model:\n  seq_length: 4096\ntrain:\n  micro_batch_size: 1\noptimzer:\n  lr: 0.1\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "configs/own.yaml": own,
            "configs/bridge.yaml": bridge,
            "run.sh": "python scripts/training/run_recipe.py --config-file configs/bridge.yaml\n",
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["line"]) for f in check_findings(capsys, root) if f["code"] == "PK207"
    )
    assert found == [("bridge.yaml", 6)], found


def test_extglob_turned_on_after_a_semicolon(tmp_path: Path, capsys) -> None:
    # modelscope/FunASR's vendored openfst script: `set -euo pipefail; shopt -s extglob` then `ls -- !(a|b)`
    root = write_tree(tmp_path, {".git/HEAD": "", "x.sh": "set -euo pipefail; shopt -s extglob\nls -- !(a|b)\n"})
    assert [f["code"] for f in check_findings(capsys, root / "x.sh")] == []


_MG = (
    "torchrun --nproc_per_node 8 {program} --num-layers 2 --hidden-size 64 --num-attention-heads 2 "
    "--micro-batch-size 1 --global-batch-size 8 --seq-length 128 --max-position-embeddings 128 {extra}\n"
)


def test_a_megatron_patch_in_the_checkout_makes_its_launches_a_fork_s(tmp_path: Path, capsys) -> None:
    # inclusionAI/Ling-V2: training/megatron/bailing_moe_v2.patch adds `--bias-zero-mean-update` to a downloaded
    # core_v0.13.0 (apply_patch.sh)
    patch = "diff --git a/megatron/training/arguments.py b/megatron/training/arguments.py\n--- a/megatron/training/"
    patch += "arguments.py\n+++ b/megatron/training/arguments.py\n@@ -1 +1,2 @@\n+    group.add_argument('--x')\n"
    run = _MG.format(program="Megatron-LM-core_v0.13.0/pretrain_gpt.py", extra="--bias-zero-mean-update")
    root = write_tree(tmp_path / "a", {".git/HEAD": "", "training/megatron/m.patch": patch, "run.sh": run})
    plain = write_tree(tmp_path / "b", {".git/HEAD": "", "run.sh": run})
    codes = [f["code"] for f in check_findings(capsys, root / "run.sh") if f["severity"] != "info"]
    assert codes == [] and [f["code"] for f in check_findings(capsys, plain / "run.sh")] == ["PK201"]


def test_several_flags_no_release_defines_are_one_code_base_s(tmp_path: Path, capsys) -> None:
    # allenai/OLMoE's copies of megablocks' scripts: `third_party/Megatron-LM/pretrain_gpt.py` (megablocks' fork)
    # with `--moe-num-experts 64 --moe-top-k 1 --DDP-impl local`; one near name alone stays a typo (PK201)
    several = _MG.format(program="third_party/Megatron-LM/pretrain_gpt.py", extra="--moe-num-experts 64 --DDP-impl l")
    one = _MG.format(program="third_party/Megatron-LM/pretrain_gpt.py", extra="--DDP-impl local")
    root = write_tree(tmp_path, {".git/HEAD": "", "several.sh": several, "one.sh": one})
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, root) if f["severity"] != "info"
    )
    assert found == [("one.sh", "PK201")], found


def test_machine_files_of_launches_the_checkout_does_not_hold(tmp_path: Path, capsys) -> None:
    lf = (
        "llamafactory-cli train --stage sft --do_train True --model_name_or_path m --finetuning_type full "
        "--template llama3 --dataset_dir data --dataset {ds} --output_dir saves/x --deepspeed cache/ds_z3_config.json\n"
    )
    eval_py = "import argparse, json\np = argparse.ArgumentParser()\np.add_argument('pred')\np.add_argument('gold')\n"
    eval_py += "a = p.parse_args()\njson.load(open(a.gold))\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            # yueliu1999/GuardReasoner: datasets no dataset_info.json of the checkout defines (LLaMA-Factory's tree)
            "data/dataset_info.json": '{"mine": {"file_name": "mine.json"}}',
            "train/elsewhere.sh": lf.format(ds="GuardTrainR"),
            "train/here.sh": lf.format(ds="mine"),
            # zjunlp/OneGen: data/eval_data/qa/ holds only a README ("download the data here")
            "data/eval_data/qa/README.md": "download dev.json here\n",
            "scripts/qa/eval_qa.py": eval_py,
            "scripts/eval.sh": "python qa/eval_qa.py ../data/eval_data/qa/dev.json p.json\n",
            # wenet-e2e/wenet: the DeepSpeed JSON is opened only under `--train_engine deepspeed`
            "bin/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--train_engine')\n"
            "p.add_argument('--deepspeed_config')\np.parse_args()\n",
            "run.sh": "torchrun --nproc_per_node=8 bin/train.py --train_engine torch_ddp "
            "--deepspeed_config conf/ds.json\n",
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK601"
    )
    assert found == [("elsewhere.sh", "info"), ("eval.sh", "info"), ("here.sh", "warning")], found


def test_a_lightning_settings_json_is_not_deepspeed_s(tmp_path: Path, capsys) -> None:
    # kaistAI/CoT-Collection: `train_batch_size` among its own keys (Lightning builds the DeepSpeed config)
    own = '{"train_batch_size": 4, "learning_rate": 5e-5, "model": "t5", "gradient_accumulation_steps": 64, "ngpu": 8}'
    ds = '{"train_batch_size": 4, "gradient_accumulation_steps": 64, "train_micro_batch_size_per_gpu": 1}'
    root = write_tree(tmp_path, {".git/HEAD": "", "configs/train.json": own, "configs/ds.json": ds})
    found = sorted(f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root) if f["code"] == "PK610")
    assert found == ["ds.json"], found


def test_a_script_named_through_a_linked_folder_sources_beside_the_link(tmp_path: Path, capsys) -> None:
    # wenet-e2e/wenet: examples/a/s0/tools -> ../../../tools; tools/format_data.sh does `. ./path.sh`, run as
    # `tools/format_data.sh` from the recipe folder, which holds path.sh
    root = write_tree(
        tmp_path,
        {".git/HEAD": "", "tools/format_data.sh": ". ./path.sh\necho $nj\n", "examples/a/s0/path.sh": "nj=1\n"},
    )
    (root / "examples/a/s0/tools").symlink_to("../../../tools")
    linked = root / "examples/a/s0/tools/format_data.sh"
    assert [f["code"] for f in check_findings(capsys, linked) if f["code"] == "PK106"] == []
    assert [f["code"] for f in check_findings(capsys, root / "tools/format_data.sh") if f["code"] == "PK106"] == [
        "PK106"
    ]


def test_the_script_s_directory_in_two_steps(tmp_path: Path, capsys) -> None:
    # TsinghuaAI/CPM-1-Finetune: `CUR_PATH=$(realpath $0)` then `CUR_DIR=$(dirname ${CUR_PATH})`; dirname of a known
    # word is POSIX dirname's
    parser = argparse_program("--a")
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "sub/v.py": parser,
            "sub/run.sh": "CUR_PATH=$(realpath $0)\nCUR_DIR=$(dirname ${CUR_PATH})\npython $CUR_DIR/v.py --b 1\n",
        },
    )
    found = [
        (f["line"], f["severity"]) for f in check_findings(capsys, root / "sub" / "run.sh") if f["code"] == "PK201"
    ]
    assert found == [(3, "error")], found


def test_posix_dirname() -> None:
    from packlint.interpret.expansion import posix_dirname

    cases = {"a/b/": "a", "a/b": "a", "file": ".", "/": "/", "//x": "/", "/usr//lib/": "/usr", "": ".", "a//b": "a"}
    assert {k: posix_dirname(k) for k in cases} == cases


def test_dollar_zero_in_a_sourced_file_is_the_script_run(tmp_path: Path, monkeypatch) -> None:
    # PKU-Alignment/align-anything: scripts/vla/spoc_sft.sh sources ./scripts/setup.sh, whose
    # `SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"; ROOT_DIR="$(dirname "${SCRIPT_DIR}")"` are scripts/vla and scripts
    # (bash's $0 is the script run; BASH_SOURCE the file being read)
    from packlint.api import inspect_script

    setup = 'SCRIPT_DIR="$(cd "$(dirname "$0")" &>/dev/null && pwd)"\nROOT_DIR="$(dirname "${SCRIPT_DIR}")"\n'
    setup += 'export PYTHONPATH="${ROOT_DIR}"\nHERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\nexport HERE\n'
    root = write_tree(
        tmp_path,
        {".git/HEAD": "", "scripts/setup.sh": setup, "scripts/vla/run.sh": "source ./scripts/setup.sh\npython x.py\n"},
    )
    monkeypatch.chdir(root)  # (the job starts in the checkout's root, as the script's `source ./scripts/...` says)
    model = inspect_script("scripts/vla/run.sh")
    env = model["launches"][0]["env"]
    assert env["PYTHONPATH"]["value"] == str(root / "scripts")
    assert env["HERE"]["value"] == str(root / "scripts")
