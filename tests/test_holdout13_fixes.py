"""Mechanisms the thirteenth holdout (on 0.3.5) found, each in its repository's shape:

- imanjundi/mod-gen-eval: `scripts/eval_all.sh` passes `--do_eval True` and its "$@" to `eval_original.sh`, which passes
  its own `--do_eval False` and its "$@" to `run.sh`, which ends `python baseline.py "${args[@]}" "$@"`: a chain of
  override wrappers, each caller's words after its callee's; PK103 said "--do_eval is given 2 times ... the last one
  wins" (a caller's override of its callee's array was already no repeat one level up, not two).
- dhrubo326/BiG-RAG: `python3 -m verl.trainer.main_ppo data.max_start_length=4096 ...` run from the root, whose
  `.gitignore` ignores `verl/` (the authors' modified verl, deleted from the tree): the machine's copy runs, not a
  release, so PK207's "not a key of verl's config" rests on the machine (an info), not on the release assumed.
- LorrinWWW/Quick_Deployment_HELM: `python3 -m torch.distributed.launch ... serving_dist_glm.py $MODEL_ARGS
  --model-parallel-size 8`, a program of the checkout whose parser is SwissArmyTransformer's `get_args` (not read):
  PK324 said "a retired Megatron argument" at error, from upstream's validate_args. A program whose parser was not
  read is Megatron's only where it imports `megatron`.
- Tobeginwith/MRCL-Merge: `compute_mask.sh` does `shift 2; DATASETS=("$@")` and passes `--datasets "${DATASETS[@]}"`:
  a quoted list is none of the words when empty (as shipped), so PK202 said "--datasets needs at least one value" at
  error, though the value is the caller's (an unquoted `$X` was already undecided).
- agentic-backdoor/agentic-backdoor keeps one requirements file per environment (`requirements/sft.txt` pins
  llamafactory==0.9.4, which its setup script installs): packlint read only top-level requirements*.txt, so PK401
  assumed the newest release (whose collator asserts bsz 1 for neat packing) against the checkout's own pin.
- Manto/chess-reasoning-zero's poetry.lock locks verl "0.1" from a git branch (`[package.source] type = "git"`): a
  commit of 2025 whose version file still said 0.1, not the 0.1 release; 17 PK207 errors "not a key of verl 0.1's
  config".
- NUSTM/CBT-Counselor vendors verl with `@hydra.main(config_path="xxx/counselor_configs", config_name=...)` (a
  placeholder for the user's path): packlint took the decorator's config_name but kept verl's default directory, and
  PK601 reported verl/trainer/config/ppo_train_config.yaml missing, a file Hydra never looks for.
- matsuolab/nedo_project_code's run_clm.py calls only `parser.parse_json_file(sys.argv[1])` (its command-line branch
  commented out): `deepspeed train/run_clm.py train/train_config.json --deepspeed --deepspeed_config ...` never has
  its flags parsed, yet PK202 said "--deepspeed needs a value" at error.
- matsuolab/nedo_project_code (team_hatakeyama) launches `/storage5/llm/codes/2_pretrain/Megatron-DeepSpeed/tools/
  hf2megads_weight_converter.py`, another machine's path packlint maps to the checkout's copy by the ends of the
  paths: PK310 named that premise, but PK330 (the startup check that fails) reported an error without it (the check's
  results were kept from an earlier rule's reading, the premise was not).
- kwai/Megatron-Kwai's examples run `../../../Megatron-LM-Jan-1-2024/pretrain_gpt.py` (its README: "the snapshot of
  NVIDIA/Megatron-LM at Jan 1, 2024"), whose validate_args asserts --tp-comm-overlap's sequence parallelism before it
  turns sequence parallelism off at TP 1: PK311 judged today's order. A directory name dating Megatron-LM before the
  snapshots' releases is code they do not describe: undecided, as a fork's.
- Tobeginwith/MRCL-Merge's GSPO-Experts-30B/run.sh runs verl release/v0.8.0 (its setup.sh clones it) with
  `model_engine=megatron`, a defaults group newer than packlint's snapshots, under which the actor's optim is
  Megatron's (lr_decay_style, min_lr): PK207 said those keys are in no release, assuming a snapshot's release. A
  top-level key or group no snapshot has says the release is none of theirs: the snapshot verdicts are dropped.
- AI-Hypercomputer/gpu-recipes' GKE launchers pass `trainer.num_nodes="$NNODES"` (NNODES set by the Helm chart's
  job) and later `trainer.num_nodes=16`: PK103 compared '' with '16' (23 warnings). A value from a variable the
  script never sets is the environment's: a repeat with it is undecided (the Hydra form also lost that premise).
- llm-jp/scripts' installers `git clone https://github.com/llm-jp/Megatron-LM -b $TAG` where the jobs run
  `src/Megatron-LM/pretrain_gpt.py`; swiss-ai/pretrain-code's README: "based on [Megatron-LM](https://github.com/
  swiss-ai/Megatron-LM)": 150 PK201/PK202/PK316 warnings judged upstream's snapshots against the fork the checkout
  names. A checkout that clones, or links, another owner's Megatron-LM runs that fork: undecided (PK206).
- llm-jp/scripts' jobs `source environment/scripts/environment.sh`, a copy the installer puts in place from
  pretrain/installers/v3/scripts/ (a file made at set-up: an info), and an installer writes
  `print_env_shell > $NEW_ENV_SHELL` before `source $NEW_ENV_SHELL` (made by the script: not missing); PK106 warned.
- swiss-ai/pretrain-code's 70B scripts pass `--transformer-impl transformer_engine --reset-attention-mask` to
  `$MEGATRON_LM_DIR/pretrain_gpt.py` (not in the checkout): PK490 reported an error without naming that GPTDataset's
  and Transformer Engine's behaviour was taken to be upstream's (it did when TE was the default).
- radixark/miles defines `--calculate-per-token-loss` through `reset_arg(parser, name, **kwargs)`, which ends
  `parser.add_argument(name, **kwargs)`, called with action="store_true": read without the caller's keywords, the flag
  took one value, and PK202 said "needs a value" at error.

Its second part (on the fixed tree, repositories nobody had read):

- MikeyShechter/Megatron-LM's parse_args runs a pre-parser (`--config`, parse_known_args) and sets
  `sys.argv = [sys.argv[0]] + ...` before the main parser parses: `--config` is accepted, yet PK201 said it is not a
  flag (at error). A module the parse runs through that changes sys.argv opens the flag set, as the program's own
  file already did.
- johnhaofu/compiler-reward-agent-rl exports `PYTHONPATH=/root/autodl-tmp/verl-agent:$PYTHONPATH` (a verl-agent fork on
  the machine) before `python -m verl.trainer.main_ppo ... multi_turn.max_turns=50`: the verl that runs is that
  folder's, so PK207 from the snapshots rests on the machine (info); and "in any release from 0.1 to main" claimed
  more than the snapshots hold (they skip 0.4.0, which has the key): it says "in any release packlint has a snapshot
  of" now.
- ianbarber/retrieve-cheaply runs `$PY scripts/synth_mf.py runs/agent/x.json ...` only `if [ ! -f runs/agent/x.json ]`
  (the program writes that file): PK601 said the config file is missing. A launch that runs only when a file does
  not exist makes it.
- EnronMusk/generative-adapter passes `--deepspeed $PROJECT_ROOT/data/deepspeed/stage2.json --train_data
  $PROJECT_ROOT/data/sft/...`, data/ being a folder its README clones at set-up (the checkout has none): PK601 warned.
  A config in a top-level folder the checkout lacks, from which the launch reads other files too, is the machine's."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.check_helpers import check_findings, hf_program, write_tree

_PROG = (
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--do_eval')\np.add_argument('--do_predict')\n"
    "print(p.parse_args())\n"
)


def test_each_level_of_passed_words_overrides_the_one_it_calls(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "baseline.py": _PROG,
            "scripts/run.sh": 'args=(--do_predict True)\npython ../baseline.py "${args[@]}" "$@"\n',
            "scripts/eval_original.sh": 'args=(--do_predict False --do_eval False)\nbash ./run.sh "${args[@]}" "$@"\n',
            "scripts/eval_all.sh": 'args=(--do_eval True)\nbash ./eval_original.sh "${args[@]}" "$@"\n',
            # a repeat inside one caller's own words still competes, at any level
            "scripts/twice.sh": 'args=(--do_eval True --do_eval False)\nbash ./eval_original.sh "${args[@]}" "$@"\n',
        },
    )
    found = [
        (f["path"].rsplit("/", 1)[-1], f["line"])
        for f in check_findings(capsys, root / "scripts" / "eval_all.sh", root / "scripts" / "twice.sh")
        if f["code"] == "PK103"
    ]
    assert found == [("twice.sh", 1)]


def test_a_stack_the_checkout_ignores_is_the_machine_s_copy(tmp_path: Path, capsys) -> None:
    script = (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo data.max_prompt_length=4096 "
        "data.max_start_length=4096 trainer.n_gpus_per_node=4\n"
    )
    for ignore, want in (("verl/\nagent/\n", "info"), ("agent/\n", "warning")):
        root = write_tree(tmp_path / want, {".git/HEAD": "", ".gitignore": ignore, "run_grpo.sh": script})
        (found,) = [f for f in check_findings(capsys, root / "run_grpo.sh") if f["code"] == "PK207"]
        assert found["severity"] == want
        assert ("the launched code is the machine's copy" in found["message"]) == (want == "info")


def test_a_program_whose_parser_is_another_stack_s_is_not_checked_by_megatron_s_asserts(tmp_path: Path, capsys) -> None:
    flags = "--model-parallel-size 8 --num-layers 70 --hidden-size 12288 --num-attention-heads 96 --fp16 --load /ckpt"
    for imports, want in (
        ("from SwissArmyTransformer import get_args", []),
        ("from megatron.training import get_args", ["PK324"]),
    ):
        root = write_tree(
            tmp_path / imports.split()[1],
            {
                ".git/HEAD": "",
                "serving_dist_glm.py": f"{imports}\nargs = get_args()\n",
                "start_dist_glm.sh": "#!/bin/bash\nMP_SIZE=8\npython3 -m torch.distributed.launch --nproc_per_node $MP_SIZE "
                f"serving_dist_glm.py {flags}\n",
            },
        )
        found = [f["code"] for f in check_findings(capsys, root / "start_dist_glm.sh") if f["code"] == "PK324"]
        assert found == want, imports


def test_a_quoted_list_after_a_flag_may_be_its_values(tmp_path: Path, capsys) -> None:
    prog = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--model', required=True)\n"
        "p.add_argument('--datasets', nargs='+', required=True)\np.add_argument('--top', type=float)\np.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "src/compute_importance_mask.py": prog,
            "scripts/compute_mask.sh": '#!/bin/bash\nset -euo pipefail\nBASE_MODEL=$1\nTASK_ID=$2\nshift 2\nDATASETS=("$@")\n'
            'python src/compute_importance_mask.py --model "$BASE_MODEL" --datasets "${DATASETS[@]}" --top 10.0\n',
            "scripts/direct.sh": '#!/bin/bash\npython src/compute_importance_mask.py --model m --datasets "$@" --top 10.0\n',
            "scripts/shifted.sh": '#!/bin/bash\npython src/compute_importance_mask.py --model "${@:2}" --datasets a\n',
            # a quoted scalar is one word, empty or not: a flag with nothing after it stays PK202
            "scripts/none.sh": '#!/bin/bash\nX=""\npython src/compute_importance_mask.py --model "$X" --datasets\n',
        },
    )
    found = [f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root / "scripts") if f["code"] == "PK202"]
    assert found == ["none.sh"]


def test_requirements_per_environment_pin_the_stack_where_they_agree(tmp_path: Path, capsys) -> None:
    config = (
        "model_name_or_path: Qwen/Qwen3-1.7B\nstage: sft\ndo_train: true\nfinetuning_type: full\n"
        "dataset: alpaca_en_demo\ntemplate: qwen3\ncutoff_len: 4096\noutput_dir: out\nflash_attn: fa2\n"
        "neat_packing: true\nper_device_train_batch_size: 8\nlearning_rate: 1.0e-5\n"
    )
    for reqs, want in (
        ({"requirements/sft.txt": "llamafactory[deepspeed,metrics]==0.9.4\n"}, []),
        ({"requirements/sft.txt": "llamafactory==0.9.4\n", "requirements/rl.txt": "llamafactory==0.9.5\n"}, ["PK401"]),
        ({"requirements/sft.txt": "llamafactory==0.9.4\n", "requirements.txt": "llamafactory==0.9.5\n"}, ["PK401"]),
    ):
        root = write_tree(
            tmp_path / str(len(list(tmp_path.iterdir()))),
            {
                ".git/HEAD": "",
                "configs/sft.yaml": config,
                "scripts/train/sft.sh": "#!/bin/bash\nllamafactory-cli train configs/sft.yaml\n",
                **reqs,
            },
        )
        assert [f["code"] for f in check_findings(capsys, root) if f["code"] == "PK401"] == want, reqs


def test_a_package_locked_from_git_is_no_release_pin(tmp_path: Path, capsys) -> None:
    script = (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
        "actor_rollout_ref.actor.use_kl_loss=True trainer.n_gpus_per_node=2\n"
    )
    entry = '[[package]]\nname = "verl"\nversion = "0.1"\ndescription = ""\noptional = false\npython-versions = "*"\n'
    git = (
        '\n[package.source]\ntype = "git"\nurl = "https://github.com/Manto/verl.git"\n'
        'reference = "feature/support-custom-compute-score"\nresolved_reference = "3a604baa"\n'
    )
    for lock, want in ((entry + git, set()), (entry, {"error"})):
        root = write_tree(
            tmp_path / str(len(lock)),
            {".git/HEAD": "", "poetry.lock": lock, "train_grpo.sh": script},
        )
        found = {f["severity"] for f in check_findings(capsys, root / "train_grpo.sh") if f["code"] == "PK207"}
        assert found == want, lock


def test_the_live_hydra_main_s_config_path_locates_the_config(tmp_path: Path, capsys) -> None:
    cfg = "data:\n  train_batch_size: 1024\ntrainer:\n  n_gpus_per_node: 8\n"
    for path, want in (
        ("../../app/configs", {("PK207", "app/configs/ppo_train_config.yaml")}),
        ("xxx/counselor_configs", set()),
    ):
        root = write_tree(
            tmp_path / path.split("/")[0].strip("."),
            {
                ".git/HEAD": "",
                "verl/__init__.py": "",
                "verl/version/version": "0.5.0\n",
                "verl/trainer/__init__.py": "",
                "verl/trainer/config/ppo_trainer.yaml": cfg,
                "verl/trainer/main_ppo.py": f'import hydra\n\n\n@hydra.main(config_path="{path}", '
                'config_name="ppo_train_config", version_base=None)\ndef main(config):\n    pass\n',
                "app/configs/ppo_train_config.yaml": cfg,
                "run_ppo.sh": "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=64 "
                "trainer.n_gpus_per_node=2 data.bogus_key=3\n",
            },
        )
        found = {
            (f["code"], f["message"].split("(", 1)[1].split(")", 1)[0])
            for f in check_findings(capsys, root / "run_ppo.sh")
            if f["code"] in ("PK207", "PK601")
        }
        assert found == want, path


def test_a_parser_that_only_reads_a_file_does_not_judge_the_command_line(tmp_path: Path, capsys) -> None:
    head = "import os\nimport sys\n\nfrom transformers import HfArgumentParser, TrainingArguments\n\n"
    head += "parser = HfArgumentParser((TrainingArguments,))\n"
    json_only = "# if len(sys.argv) == 2 and sys.argv[1].endswith('.json'):\n"
    json_only += "(args,) = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))\n"
    both = "if len(sys.argv) == 2 and sys.argv[1].endswith('.json'):\n"
    both += "    (args,) = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))\n"
    both += "else:\n    (args,) = parser.parse_args_into_dataclasses()\n"
    launch = "#!/bin/bash\ndeepspeed --no_local_rank train/run_clm.py train/train_config.json --deepspeed "
    launch += "--deepspeed_config config/ds_config.json\n"
    for body, want in ((json_only, []), (both, ["PK202"])):
        root = write_tree(
            tmp_path / str(len(body)),
            {".git/HEAD": "", "pretrain/train/run_clm.py": head + body, "pretrain/multi.sh": launch},
        )
        found = [f["code"] for f in check_findings(capsys, root / "pretrain" / "multi.sh") if f["code"] == "PK202"]
        assert found == want


def test_a_failing_startup_check_keeps_the_premise_of_the_path_mapping(tmp_path: Path, capsys) -> None:
    fixture = Path(__file__).parent / "fixtures" / "startup" / "upstream"
    shutil.copytree(fixture, tmp_path / "codes" / "Megatron-LM", ignore=shutil.ignore_patterns("*.sh", "*.expected"))
    (tmp_path / ".git").mkdir()
    for program, want in (
        ("/storage5/llm/codes/Megatron-LM/pretrain_gpt.py", "warning"),
        ("Megatron-LM/pretrain_gpt.py", "error"),
    ):
        script = tmp_path / "codes" / f"convert_{want}.sh"
        script.write_text(
            f"#!/bin/bash\ncd $(dirname $0)\ntorchrun --nproc_per_node 8 --nnodes 2 {program} --num-layers 30 "
            "--hidden-size 4096 --num-attention-heads 32 --tensor-model-parallel-size 2 "
            "--pipeline-model-parallel-size 4 --micro-batch-size 1\n"
        )
        (found,) = [f for f in check_findings(capsys, script) if f["code"] == "PK330"]
        assert found["severity"] == want
        assert bool(found.get("premises")) == (want == "warning")


def test_a_megatron_directory_dated_before_the_snapshots_is_not_judged_by_them(tmp_path: Path, capsys) -> None:
    flags = (
        "--tensor-model-parallel-size $TP --sequence-parallel --tp-comm-overlap --num-layers 2 --hidden-size 64 "
        "--num-attention-heads 2 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
        "--global-batch-size 8"
    )
    for name, want in (("Megatron-LM-Jan-1-2024", []), ("Megatron-LM-core_r0.5.0", []), ("Megatron-LM", ["PK311"])):
        root = write_tree(
            tmp_path / name,
            {
                ".git/HEAD": "",
                "examples/atc24/run.sh": f"#!/bin/bash\nTP=1\npython3 ../../../{name}/pretrain_gpt.py {flags}\n",
            },
        )
        assert [f["code"] for f in check_findings(capsys, root) if f["code"] == "PK311"] == want, name


def test_a_verl_group_no_snapshot_has_means_a_release_they_lack(tmp_path: Path, capsys) -> None:
    base = (
        "#!/bin/bash\npython -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.actor.optim.lr=1e-6 "
        "actor_rollout_ref.actor.optim.lr_decay_style=cosine actor_rollout_ref.actor.optim.min_lr=0.0"
    )
    root = write_tree(
        tmp_path,
        {".git/HEAD": "", "run_megatron.sh": base + " model_engine=megatron\n", "run_dp.sh": base + "\n"},
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["message"].split()[0])
        for f in check_findings(capsys, root)
        if f["code"] == "PK207"
    )
    assert found == [
        ("run_dp.sh", "actor_rollout_ref.actor.optim.lr_decay_style"),
        ("run_dp.sh", "actor_rollout_ref.actor.optim.min_lr"),
    ]


def test_a_repeat_with_a_value_the_environment_gives_is_undecided(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "recipe/run.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--nodes', type=int)\n"
            "p.add_argument('--lr')\np.parse_args()\n",
            "recipe/launcher.sh": "#!/bin/bash\nNEMO_LAUNCH_SCRIPT=run.py\ntorchrun --nproc-per-node 8 ${NEMO_LAUNCH_SCRIPT} "
            '--factory "recipe()" trainer.num_nodes="$NNODES" trainer.max_steps=25 trainer.num_nodes=16\n',
            "recipe/flags.sh": '#!/bin/bash\npython run.py --nodes "$NNODES" --lr 1 --nodes 2\n',
            "recipe/both_written.sh": "#!/bin/bash\npython run.py trainer.num_nodes=8 trainer.max_steps=25 trainer.num_nodes=16\n",
            "recipe/flags_written.sh": "#!/bin/bash\npython run.py --nodes 4 --lr 1 --nodes 2\n",
        },
    )
    found = [f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root / "recipe") if f["code"] == "PK103"]
    assert found == ["both_written.sh", "flags_written.sh"]


def test_a_fork_the_checkout_clones_or_links_is_the_code_it_runs(tmp_path: Path, capsys) -> None:
    train = (
        "#!/bin/bash\npython src/Megatron-LM/pretrain_gpt.py --use-mpi --num-layers 2 --hidden-size 64 "
        "--num-attention-heads 2 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
        "--global-batch-size 8\n"
    )
    cases = (
        (
            {
                "pretrain/installers/v4/install.sh": "git clone https://github.com/llm-jp/Megatron-LM -b $TAG src/Megatron-LM\n"
            },
            "PK206",
        ),
        ({"README.md": "Based on [Megatron-LM](https://github.com/swiss-ai/Megatron-LM).\n"}, "PK206"),
        (
            {"pretrain/installers/v4/install.sh": "git clone https://github.com/NVIDIA/Megatron-LM src/Megatron-LM\n"},
            "PK201",
        ),
        (
            {"README.md": "See https://github.com/NVIDIA/Megatron-LM and https://github.com/swiss-ai/Megatron-LM\n"},
            "PK201",
        ),
    )
    for k, (files, want) in enumerate(cases):
        root = write_tree(tmp_path / str(k), {".git/HEAD": "", "pretrain/scripts/train.sh": train, **files})
        codes = {f["code"] for f in check_findings(capsys, root / "pretrain" / "scripts" / "train.sh")}
        assert want in codes and ({"PK201", "PK206"} - {want}).isdisjoint(codes), files


def test_a_sourced_file_the_set_up_copies_or_the_script_writes_is_not_missing(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "pretrain/installers/v3/scripts/environment.sh": "export PATH=$PATH\n",
            "pretrain/scripts/train.sh": "#!/bin/bash\nENV_DIR=environment\nsource ${ENV_DIR}/scripts/environment.sh\n"
            "python train.py\n",
            "pretrain/scripts/missing.sh": "#!/bin/bash\nsource environment/scripts/nowhere.sh\npython train.py\n",
            "evaluation/install.sh": '#!/bin/bash\nNEW_ENV_SHELL=scripts/environment.sh\nprint_env_shell() {\n  echo "export A=1"\n}\n'
            "mkdir scripts\nprint_env_shell > $NEW_ENV_SHELL\nsource $NEW_ENV_SHELL\npython train.py\n",
        },
    )
    found = {
        (f["path"].rsplit("/", 1)[-1], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK106"
    }
    assert found == {("train.sh", "info"), ("missing.sh", "warning")}


def test_pk490_without_the_code_names_the_upstream_premise(tmp_path: Path, capsys) -> None:
    flags = (
        "--reset-attention-mask --num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 128 "
        "--max-position-embeddings 128 --micro-batch-size 1"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "70b-8k.sh": "#!/bin/bash\nMEGATRON_LM_DIR=/PATH/TO/Megatron-LM\npython3 $MEGATRON_LM_DIR/pretrain_gpt.py "
            f"--transformer-impl transformer_engine {flags}\n",
            "8b.sh": f"#!/bin/bash\nMEGATRON_LM_DIR=/PATH/TO/Megatron-LM\npython3 $MEGATRON_LM_DIR/pretrain_gpt.py {flags}\n",
        },
    )
    found = [(f["path"], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK490"]
    assert sorted(p.rsplit("/", 1)[-1] for p, _ in found) == ["70b-8k.sh", "8b.sh"]
    assert {s for _, s in found} == {"warning"}


def test_a_flag_added_with_keywords_not_read_takes_an_unknown_number_of_words(tmp_path: Path, capsys) -> None:
    prog = (
        "import argparse\n\n\ndef reset_arg(parser, name, **kwargs):\n    parser.add_argument(name, **kwargs)\n\n\n"
        "p = argparse.ArgumentParser()\nreset_arg(p, '--calculate-per-token-loss', action='store_true')\n"
        "p.add_argument('--lr')\np.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train_async.py": prog,
            "run_sft.sh": "#!/bin/bash\npython train_async.py --calculate-per-token-loss --lr\n",
        },
    )
    found = [f["message"].split()[0] for f in check_findings(capsys, root / "run_sft.sh") if f["code"] == "PK202"]
    assert found == ["--lr"]


def test_a_module_of_the_parse_that_edits_sys_argv_opens_the_flags(tmp_path: Path, capsys) -> None:
    args = (
        "import argparse\nimport sys\n\n\ndef parse_args():\n    pre = argparse.ArgumentParser(add_help=False)\n"
        "    pre.add_argument('--config')\n    a, rest = pre.parse_known_args()\n    EDIT\n"
        "    p = argparse.ArgumentParser()\n    p.add_argument('--num-layers', type=int)\n    return p.parse_args()\n"
    )
    for edit, want in (("sys.argv = [sys.argv[0]] + rest", []), ("print(rest)", ["--config"])):
        root = write_tree(
            tmp_path / str(len(edit)),
            {
                ".git/HEAD": "",
                "megatron/__init__.py": "",
                "megatron/training/__init__.py": "",
                "megatron/training/arguments.py": args.replace("EDIT", edit),
                "pretrain_gpt.py": "from megatron.training.arguments import parse_args\n\nparse_args()\n",
                "run_megatron.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --config conf.yaml --num-layers 2\n",
            },
        )
        found = [
            f["message"].split()[0] for f in check_findings(capsys, root / "run_megatron.sh") if f["code"] == "PK201"
        ]
        assert found == want, edit
    # a program that imports that module without running the edit (the fork's tools/preprocess_data.py) stays closed
    root = tmp_path / str(len("sys.argv = [sys.argv[0]] + rest"))
    (root / "tools").mkdir()
    (root / "tools" / "prep.py").write_text(
        "import argparse\n\nfrom megatron.training import arguments  # noqa: F401\n\n"
        "p = argparse.ArgumentParser()\np.add_argument('--input')\np.parse_args()\n"
    )
    (root / "prep.sh").write_text("#!/bin/bash\npython tools/prep.py --input x --chunk-size 2\n")
    assert [f["code"] for f in check_findings(capsys, root / "prep.sh")] == ["PK201"]


def test_a_machine_folder_first_on_pythonpath_makes_the_stack_the_machine_s(tmp_path: Path, capsys) -> None:
    launch = (
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
        "actor_rollout_ref.rollout.multi_turn.max_rounds=50 trainer.n_gpus_per_node=2\n"
    )  # (a key of no release: verl-agent's max_turns is verl 0.4.0's, a snapshot since the seventeenth holdout)
    for export, want in (("export PYTHONPATH=/root/autodl-tmp/verl-agent:$PYTHONPATH\n", "info"), ("", "warning")):
        root = write_tree(
            tmp_path / want, {".git/HEAD": "", "scripts/run_verl_grpo.sh": "#!/bin/bash\n" + export + launch}
        )
        (found,) = [f for f in check_findings(capsys, root) if f["code"] == "PK207"]
        assert found["severity"] == want
        assert "in any release packlint has a snapshot of (" in found["message"]


def test_a_file_the_launch_runs_only_without_is_one_it_makes(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "scripts/run_relabel2.sh": "#!/bin/bash\nif [ ! -f runs/agent/relabel2_harvest.json ]; then\n"
            "  python3 scripts/synth_mf.py runs/agent/relabel2_harvest.json --seeds 8\nfi\n",
            "scripts/run_seeds.sh": "#!/bin/bash\n[ -f runs/agent/s23.json ] || { python3 scripts/synth_mf.py runs/agent/s23.json; }\n",
            "scripts/run_reads.sh": "#!/bin/bash\nif [ ! -f runs/agent/other.json ]; then\n"
            "  python3 scripts/synth_mf.py runs/agent/input.json\nfi\n",
        },
    )
    found = [f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root) if f["code"] == "PK601"]
    assert found == ["run_reads.sh"]


def test_a_config_in_a_data_folder_made_at_set_up_is_the_machine_s(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "scripts/train/train.py": hf_program("train_data"),
            "scripts/train/finetune.sh": '#!/bin/bash\nPROJECT_ROOT="../../"\ntorchrun --nproc_per_node 2 train.py --output_dir out '
            "--deepspeed $PROJECT_ROOT/data/deepspeed/stage2.json --train_data $PROJECT_ROOT/data/sft/x.jsonl\n",
            "scripts/train/alone.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out "
            "--deepspeed ../../configs/stage2.json --train_data x.jsonl\n",
        },
    )
    found = {
        (f["path"].rsplit("/", 1)[-1], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK601"
    }
    assert found == {("finetune.sh", "info"), ("alone.sh", "warning")}


def test_a_double_dash_after_the_program_is_the_launcher_s(tmp_path: Path, capsys) -> None:
    prog = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--run')\np.add_argument('--device-batch-size', type=int)\np.parse_args()\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "trainer/__init__.py": "",
            "trainer/grpo_train.py": prog,
            "scripts/grpo_train.sh": "#!/bin/bash\ntorchrun --standalone --nproc_per_node=8 -m trainer.grpo_train -- "
            "--running_name=x --device-batch-size=4\n",
            # the program itself given a `--` after its own words: those after it are its positionals
            "scripts/later.sh": "#!/bin/bash\ntorchrun --standalone --nproc_per_node=8 -m trainer.grpo_train --run a -- --running_name=x\n",
        },
    )
    found = [
        (f["path"].rsplit("/", 1)[-1], f["message"].split()[0])
        for f in check_findings(capsys, root / "scripts")
        if f["code"] == "PK201"
    ]
    assert found == [("grpo_train.sh", "--running_name")]


def test_a_program_importing_megatron_s_old_layout_is_not_judged_by_today_s_asserts(tmp_path: Path, capsys) -> None:
    for imports, want in (
        ("from megatron import mpu\nfrom megatron.schedules import get_forward_backward_func\n", []),
        ("from megatron.training.initialize import initialize_megatron\n", ["PK324"]),
    ):
        prog = f"import sys\n\nsys.path.append('../Megatron-LM')\n{imports}"
        root = write_tree(
            tmp_path / str(len(imports)),
            {
                ".git/HEAD": "",
                "dist_megatron_train_qqp.py": prog,
                "scripts/local_megatron.sh": "#!/bin/bash\ncd ..\npython -m torch.distributed.launch --nproc_per_node 2 "
                "dist_megatron_train_qqp.py --num-layers 2 --checkpoint-activations\n",
            },
        )
        assert [f["code"] for f in check_findings(capsys, root) if f["code"] == "PK324"] == want, imports


def test_a_near_name_beside_the_name_the_code_reads_is_no_misspelling(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "eval/generate_response.py": "import os\n\nSYSTEM_PROMPT = os.environ.get('SYSTEM_PROMPT', 'x')\nprint(SYSTEM_PROMPT)\n",
            "eval/generate_res.sh": "#!/bin/bash\nexport SYSTEM_PROMPT_RL=a\nexport SYSTEM_PROMPT_SFT_RL=b\n"
            'export SYSTEM_PROMPT="${SYSTEM_PROMPT_SFT_RL}"\npython eval/generate_response.py\n',
            "eval/typo.sh": "#!/bin/bash\nexport SYSTEM_PROMPT_RL=a\npython eval/generate_response.py\n",
        },
    )
    assert [f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root) if f["code"] == "PK203"] == ["typo.sh"]


def test_a_guard_on_the_machine_folder_contradicts_taking_it_for_the_checkout(tmp_path: Path, capsys) -> None:
    script = (
        '#!/usr/bin/env bash\nset -euo pipefail\nBRANCH_NAME="${1:-original}"\nROOT="/zhaoshu/subgraph"\n'
        'BACKEND_SOURCE="$ROOT/backend_branches/$BRANCH_NAME/retrieve/graph_server.py"\n'
        'if [[ ! -f "$BACKEND_SOURCE" ]]; then\n  echo "Unknown backend branch" >&2\n  exit 1\nfi\n'
        'exec python "$ROOT/graph_server.py" --backend-source "$BACKEND_SOURCE"\n'
    )
    server = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--port')\np.parse_args()\n"
    for held, want in (({}, []), ({"backend_branches/original/retrieve/graph_server.py": ""}, ["PK201"])):
        root = write_tree(
            tmp_path / str(len(held)),
            {".git/HEAD": "", "graph_server.py": server, "scripts/start_graph_server_branch.sh": script, **held},
        )
        assert [f["code"] for f in check_findings(capsys, root / "scripts") if f["code"] == "PK201"] == want, held
