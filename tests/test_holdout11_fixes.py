"""Mechanisms the holdouts of the 0.3.4 round left open and the eleventh holdout found, each in its repository's shape:

- AaronJi/MeGan's training_scripts/qwen7b_sft_template.sh builds its optional flags by successive appends
  (`FLAG_AGRS="$FLAG_AGRS --firefly"` in one `if`, `FLAG_AGRS="$FLAG_AGRS --multi_instructions"` in the next) and
  passes `$FLAG_AGRS` unquoted: every word of the value was located at the last append, so a finding on `--firefly`
  pointed at the line that adds `--multi_instructions`."""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import check_findings, hf_program, write_tree

_TRAIN = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\np.parse_args()\n"


def test_a_word_of_a_string_built_by_appends_is_located_where_it_was_written(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "src/train.py": _TRAIN,
            "training_scripts/sft.sh": '#!/bin/bash\nFIREFLY=True\nMULTI=True\nFLAG_AGRS=""\n'
            'if [ -n "$FIREFLY" ]; then\n    FLAG_AGRS="$FLAG_AGRS --firefly"\nfi\n'
            'if [ -n "$MULTI" ]; then\n    FLAG_AGRS="$FLAG_AGRS --multi_instructions"\nfi\n'
            "torchrun --nproc_per_node 8 src/train.py --lr 1e-5 $FLAG_AGRS\n",
            # `+=` appends, and the value joined again into a longer string over two lines
            "training_scripts/plus.sh": '#!/bin/bash\nF=""\nF+=" --firefly"\nF+=" --multi"\n'
            'ARGS="--lr 1e-5 \\\n    $F --other"\npython src/train.py $ARGS\n',
        },
    )
    found = {
        (f["path"].rsplit("/", 1)[-1], f["message"].split()[0], f["line"], f["column"])
        for f in check_findings(capsys, root)
        if f["code"] == "PK201"
    }
    assert found == {
        ("sft.sh", "--firefly", 6, 27),
        ("sft.sh", "--multi_instructions", 9, 27),
        ("plus.sh", "--firefly", 3, 6),
        ("plus.sh", "--multi", 4, 6),
        ("plus.sh", "--other", 6, 8),
    }, found


def test_a_finding_that_holds_only_when_a_device_tool_is_not_on_path_is_the_machine_s(tmp_path: Path, capsys) -> None:
    """AIGCodeOS/aigcode_zeta_optimizer (a MindSpeed-LLM fork): NPUS_PER_NODE from `npu-smi`, else `nvidia-smi`,
    else 1; the world size 1 is reached only on a machine without either tool."""
    detect = (
        'if [ -z "$NPUS_PER_NODE" ]; then\n'
        "    if command -v npu-smi >/dev/null 2>&1; then\n"
        '        NPUS_PER_NODE=$(npu-smi info | grep -c "Device ID")\n'
        "    elif command -v nvidia-smi >/dev/null 2>&1; then\n"
        "        NPUS_PER_NODE=$(nvidia-smi -L | wc -l)\n"
        "    else\n        NPUS_PER_NODE=1\n    fi\nfi\n"
    )
    launch = (
        "torchrun --nproc_per_node $NPUS_PER_NODE --nnodes 1 pretrain_gpt.py \\\n"
        "    --tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 --num-layers 28 --micro-batch-size 1\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            # (the fork's code is not in the checkout: its flags are judged as upstream Megatron-LM's, an assumption)
            "examples/qwen3/pretrain_qwen3.sh": "#!/bin/bash\n" + detect + launch,
            # (a branch the checkout decides keeps its severity)
            "examples/qwen3/pretrain_mode.sh": '#!/bin/bash\nMODE=$1\nif [ "$MODE" = small ]; then N=1; '
            "else N=8; fi\n" + launch.replace("$NPUS_PER_NODE", "$N"),
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK301"}
    assert found["pretrain_qwen3.sh"]["severity"] == "info", found["pretrain_qwen3.sh"]
    assert "on PATH is the machine's" in found["pretrain_qwen3.sh"]["message"]
    assert found["pretrain_mode.sh"]["severity"] != "info", found["pretrain_mode.sh"]


def test_a_continuation_glued_to_a_word_keeps_the_next_line_s_redirection(tmp_path: Path, capsys) -> None:
    """nauyan/PathologyVLM: `--vision_path "x.py"\\` + newline + `  2>&1 | tee -a log`: tree-sitter-bash read the `2`
    as an argument (PK202 "given 2 words"); bash reads `2>&1`."""
    prog = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\np.add_argument('--vision_path')\n"
        "p.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": prog,
            "glued.sh": 'torchrun --nproc_per_node=2 train.py --lr 1e-4 --vision_path "m/virchow.py"\\\n'
            '  2>&1 | tee -a "log.txt"\n',
            "spaced.sh": 'python train.py --lr 1e-4 --vision_path "m/virchow.py" 2 >log.txt\n',
        },
    )
    found = {f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root) if f["code"] == "PK202"}
    assert found == {"spaced.sh"}, found  # (`2 >log.txt`: the 2 is an argument)


def test_a_missing_hidden_env_file_and_a_path_under_an_empty_directory_are_the_machine_s(
    tmp_path: Path, capsys
) -> None:
    """lintangsutawika/lang_boot sources `./lang_boot/config/.sft_env` (a per-user env file like the gitignored
    `.env` beside it); Aries-iai/HCC-STAR's LLaMA-Factory config names `LLaMA-Factory/examples/deepspeed/...`, where
    LLaMA-Factory is a repository `git add`ed inside the checkout (a gitlink, no .gitmodules): an empty directory."""
    lf = (
        "model_name_or_path: Qwen/Qwen2.5-7B-Instruct\nstage: sft\ndo_train: true\nfinetuning_type: full\n"
        "deepspeed: LLaMA-Factory/examples/deepspeed/ds_z3_config.json\ndataset: alpaca_en_demo\n"
        "template: qwen\noutput_dir: saves/x\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            ".gitignore": ".env\n",
            "lang_boot/config/keep.yaml": "a: 1\n",
            "lang_boot/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\n"
            "p.parse_args()\n",
            "scripts/train_sft.sh": "#!/bin/bash\n. ./lang_boot/config/.sft_env\n. ./lang_boot/config/common.sh\n"
            "python lang_boot/train.py --lr 1e-5\n",
            "configs/sft.yaml": lf,
            "configs/missing.yaml": lf.replace("LLaMA-Factory/examples", "configs/examples"),
            "scripts/lf.sh": "#!/bin/bash\nFORCE_TORCHRUN=1 llamafactory-cli train configs/sft.yaml\n"
            "FORCE_TORCHRUN=1 llamafactory-cli train configs/missing.yaml\n",
        },
    )
    (root / "LLaMA-Factory").mkdir()
    findings = check_findings(capsys, root)
    pk106 = {f["message"].split("`")[1]: f["severity"] for f in findings if f["code"] == "PK106"}
    assert pk106 == {". ./lang_boot/config/.sft_env": "info", ". ./lang_boot/config/common.sh": "warning"}, pk106
    pk601 = {f["path"].rsplit("/", 1)[-1]: f for f in findings if f["code"] == "PK601"}
    assert pk601["sft.yaml"]["severity"] == "info", pk601["sft.yaml"]
    assert "empty directory" in pk601["sft.yaml"]["message"], pk601["sft.yaml"]["message"]
    assert pk601["missing.yaml"]["severity"] != "info", pk601["missing.yaml"]


def test_a_batch_rule_on_a_program_outside_the_checkout_names_its_upstream_assumption(tmp_path: Path, capsys) -> None:
    """dailiuyao/tmp-file: `cd /home/.../Megatron-LM` then `pretrain_bert.py` with a global batch 32 and micro 16 x
    DP 4: the program is not in the checkout, so the micro-batch calculator's assert is upstream's (an assumption)."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "megatron-node1_2gpus.sh": "#!/bin/bash\ncd /home/someone/Megatron-LM\n"
            "python -m torch.distributed.launch --nproc_per_node 4 --nnodes 1 pretrain_bert.py \\\n"
            "    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 \\\n"
            "    --max-position-embeddings 512 --micro-batch-size 16 --global-batch-size 32 --train-iters 100\n",
        },
    )
    (found,) = [f for f in check_findings(capsys, root) if f["code"] == "PK302"]
    assert found["severity"] == "warning" and found["evidence"] == "assumed", found
    assert "upstream Megatron-LM" in found["message"], found["message"]


def test_a_test_on_a_partly_unknown_word_with_text_is_decided(tmp_path: Path, capsys) -> None:
    """juemifuji/Megatron-LM-AIMO3: the caller exports LAUNCH_SCRIPT="torchrun --nnodes=8 --node_rank=$1 ..." and
    TP=PP=8; the callee's `if [ -z ${LAUNCH_SCRIPT} ]` default (one node) is never taken: no world-size finding."""
    launch = (
        'if [ -z ${LAUNCH_SCRIPT} ]; then LAUNCH_SCRIPT="torchrun --nproc_per_node=8"; fi\n'
        "${LAUNCH_SCRIPT} pretrain_gpt.py --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size ${PP} \\\n"
        "    --num-layers 64 --micro-batch-size 1\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "modelopt/run.sh": "#!/bin/bash\nexport TP=8\nexport PP=8\n"
            'export LAUNCH_SCRIPT="torchrun --nnodes=8 --node_rank=$1 --nproc_per_node=8"\nsh modelopt/finetune.sh\n',
            "modelopt/finetune.sh": "#!/bin/bash\n" + launch,
            # (quoted, `[[ -n ]]`: decided the same way; an unquoted word of nothing known stays open)
            "modelopt/quoted.sh": '#!/bin/bash\nX="a b $1"\nif [[ -n $X ]]; then N=8; else N=1; fi\n'
            "torchrun --nproc_per_node=$N pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 8 "
            "--micro-batch-size 1\n",
        },
    )
    found = [(f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, root) if f["code"] == "PK301"]
    assert found == [], found


def test_model_sizes_from_the_checkpoint_are_not_the_parser_s_defaults(tmp_path: Path, capsys) -> None:
    """Shimao-Zhang/Megatron-LM-evaluation: `--use-checkpoint-args --load CKPT` with EP 4 and no --num-experts:
    load_args_from_checkpoint sets num_experts before validate_args."""
    line = (
        "torchrun --nproc-per-node=8 pretrain_gpt.py {} --use-mcore-models --tensor-model-parallel-size 2 "
        "--expert-model-parallel-size 4 --load /mnt/ckpts/moe/ --micro-batch-size 1\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "inference.sh": "#!/bin/bash\n" + line.format("--use-checkpoint-args"),
            "no_ckpt_args.sh": "#!/bin/bash\n" + line.format(""),
        },
    )
    found = {f["path"] for f in check_findings(capsys, root) if f["code"] == "PK312"}
    assert {p.rsplit("/", 1)[-1] for p in found} == {"no_ckpt_args.sh"}, found


def test_a_path_out_of_the_checkout_from_the_script_s_own_folder_is_the_machine_s(tmp_path: Path, capsys) -> None:
    """Anogibot/PRPO: a root script runs `llava/train/train_mem.py` (found from the root, beside the script) with
    `--deepspeed ../scripts/zero3.json`: from where the launch runs that file is outside the checkout."""
    prog = hf_program("model_name_or_path")
    launch = "PYTHONPATH=. deepspeed llava/train/train_mem.py --deepspeed {} --model_name_or_path m --output_dir o\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "llava/train/train_mem.py": prog,
            "run_train.sh": launch.format("../scripts/zero3.json"),
            "run_in.sh": launch.format("scripts/zero3.json"),
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f["severity"] for f in check_findings(capsys, root) if f["code"] == "PK601"}
    assert found == {"run_train.sh": "info", "run_in.sh": "warning"}, found


def test_an_optional_value_given_two_words_takes_the_first(tmp_path: Path, capsys) -> None:
    """antoniocap2023/Video-LLaVA_Minecraft: `--bf16 True \\ ` + newline: HfArgumentParser's bool takes 'True' and
    the escaped blank is left over ('Some specified arguments are not used'), not 'not a truth value'."""
    prog = hf_program("model_name_or_path")
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": prog,
            "blank.sh": "deepspeed train.py --model_name_or_path m --bf16 True \\ \n --output_dir out\n",
            "two.sh": "deepspeed train.py --model_name_or_path m --bf16 True yes --output_dir out\n",
            "bad.sh": "deepspeed train.py --model_name_or_path m --bf16 maybe --output_dir out\n",
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f["message"] for f in check_findings(capsys, root) if f["code"] == "PK202"}
    assert "takes 'True'" in found["blank.sh"] and "not used by the HfArgumentParser" in found["blank.sh"], found
    assert "['yes']" in found["two.sh"], found
    assert "not a truth value" in found["bad.sh"], found


def test_choices_are_checked_after_the_type_converts(tmp_path: Path, capsys) -> None:
    """HKUSTDial/EllieSQL: `type=lambda x: x.lower() == 'true', choices=[True, False]` takes 'false'."""
    prog = (
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--basic_balance', type=lambda x: x.lower() == 'true', default=False, choices=[True, False])\n"
        "p.add_argument('--mode', choices=['a', 'b'])\np.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {".git/HEAD": "", "prep.py": prog, "run.sh": "python prep.py --basic_balance false --mode c\n"},
    )
    found = [f["message"].split()[0] for f in check_findings(capsys, root) if f["code"] == "PK202"]
    assert found == ["--mode"], found


def test_a_word_kept_by_a_prefix_removal_keeps_its_place(tmp_path: Path, capsys) -> None:
    """MAX-7237/TP: TRAIN_CMD built over lines, appended in an `if`, then `TRAIN_ARGS="${TRAIN_CMD#python -m ...}"`."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "llava/__init__.py": "",
            "llava/train/__init__.py": "",
            "llava/train/train_mem.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\n"
            "p.add_argument('--fsdp')\np.parse_args()\n",
            "scripts/train.sh": '#!/bin/bash\nTRAIN_CMD="python -m llava.train.train_mem \\\n    --lr 1e-5 \\\n'
            '    --actor_tau 0.5 \\\n    --visual x"\nif [ "$USE_FSDP" = true ]; then\n'
            '    TRAIN_CMD="${TRAIN_CMD} --fsdp full_shard"\nfi\n'
            'TRAIN_ARGS="${TRAIN_CMD#python -m llava.train.train_mem}"\n'
            "torchrun --nproc_per_node 8 -m llava.train.train_mem ${TRAIN_ARGS}\n",
        },
    )
    found = {(f["message"].split()[0], f["line"]) for f in check_findings(capsys, root) if f["code"] == "PK201"}
    assert found == {("--actor_tau", 4), ("--visual", 5)}, found


_PPO_YAML = (
    "data:\n  max_prompt_length: 512\n  max_response_length: 512\n  train_batch_size: 8\n"
    "actor_rollout_ref:\n  model:\n    path: m\n  actor:\n    ppo_mini_batch_size: 8\n    ppo_micro_batch_size: 2\n"
    "    ppo_micro_batch_size_per_gpu: null\n    use_dynamic_bsz: False\n    ppo_max_token_len_per_gpu: 16384\n"
    "trainer:\n  n_gpus_per_node: 8\n  nnodes: 1\n"
)
_BALANCING = (
    "def rearrange_micro_batches(batch, max_token_len, dp_group=None):\n"
    "    max_seq_len = batch['attention_mask'].shape[-1]\n"
    "    assert max_token_len >= max_seq_len, 'max_token_len must be greater than the sequence length'\n"
)
_BUDGET = (
    "python3 -m verl.trainer.main_ppo data.max_prompt_length=9216 data.max_response_length=8192 \\\n"
    "    actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ppo_max_token_len_per_gpu=10240\n"
)


def _verl_copy(version: str, main_ppo: str, balancing: str = _BALANCING, trainer: str = "") -> dict[str, str]:
    return {
        ".git/HEAD": "",
        "verl/__init__.py": "",
        "verl/version/version": version + "\n",
        "verl/trainer/__init__.py": "",
        "verl/trainer/main_ppo.py": main_ppo,
        "verl/trainer/config/ppo_trainer.yaml": _PPO_YAML,
        "verl/trainer/ppo/ray_trainer.py": trainer or "class RayPPOTrainer:\n    pass\n",
        "verl/utils/seqlen_balancing.py": balancing,
    }


_MAIN_PPO = "import hydra\n\n\n{deco}\ndef main(config):\n    pass\n"


def test_a_vendored_verl_0_1_uses_its_own_hydra_config_and_has_no_0_2_checks(tmp_path: Path, capsys) -> None:
    """wjqii/graphrag-r2 vendors a Search-R1-style verl 0.1 whose main_ppo says `# @hydra.main(..., config_name=
    'ppo_trainer', ...)` over the live `@hydra.main(config_path='config', config_name='grpo_trainer')`; and verl 0.1
    makes no check that ppo_micro_batch_size and ppo_micro_batch_size_per_gpu are not both set (v0.2's #136)."""
    deco = (
        "# @hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)\n"
        "@hydra.main(config_path='config', config_name='grpo_trainer', version_base=None)"
    )
    files = _verl_copy("0.1", _MAIN_PPO.format(deco=deco))
    files["verl/trainer/config/grpo_trainer.yaml"] = _PPO_YAML.replace("  model:\n", "  model:\n    lora_rank: 0\n")
    files["examples/run.sh"] = (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
        "actor_rollout_ref.model.lora_rank=32\n"
    )
    found = [(f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, write_tree(tmp_path, files))]
    assert ("run.sh", "PK207") not in found, found
    assert not any(code == "PK454" for _p, code in found), found


def test_the_token_budget_rule_is_decided_from_the_vendored_verl_s_code(tmp_path: Path, capsys) -> None:
    """Lyken17/threadweaver vendors a verl whose rearrange_micro_batches measures the longest real sequence
    (`attention_mask.sum(...)`), aHuaXu/self-researcher one whose trainer builds update batches with its own agent
    loop (run_llm_loop); a copy that asserts against the padded width still gets PK450."""
    main = _MAIN_PPO.format(deco="@hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)")
    summed = _BALANCING.replace(
        "    max_seq_len = batch['attention_mask'].shape[-1]\n",
        "    if ignore_pad:\n        max_seq_len = batch['attention_mask'].sum(dim=1).max().item()\n"
        "    else:\n        max_seq_len = batch['attention_mask'].shape[-1]\n",
    )
    agent = "from search_r1.llm_agent.generation import LLMGenerationManager\n\n\ndef fit(self):\n    run_llm_loop()\n"
    trees = {
        "padded": _verl_copy("0.5.0.dev", main),
        "summed": _verl_copy("0.5.0.dev", main, balancing=summed),
        "agent": _verl_copy("0.2.0.dev", main, trainer=agent),
    }
    fired = {}
    for name, files in trees.items():
        files["run.sh"] = "#!/bin/bash\n" + _BUDGET
        fired[name] = any(f["code"] == "PK450" for f in check_findings(capsys, write_tree(tmp_path / name, files)))
    assert fired == {"padded": True, "summed": False, "agent": False}, fired


def test_a_src_layout_module_and_a_config_only_its_keys_tie_to_a_stack(tmp_path: Path, capsys) -> None:
    """NJUxlj/AGroup-DPO: `python -m m_trainer.cli --config configs/dpo.yaml` with m_trainer in src/ (pyproject
    `packages.find where = ["src"]`) and llamafactory pinned: the CLI reads the YAML itself and imports no
    llamafactory, so the file's LLaMA-Factory-looking keys are its own; not found at all, they rest on an assumption."""
    lf = "model_name_or_path: m\nstage: dpo\nfinetuning_type: lora\ndataset: x\ntemplate: qwen\noutput_dir: o\n"
    files = {
        ".git/HEAD": "",
        "requirements.txt": "llamafactory==0.9.1\n",
        "pyproject.toml": '[project]\nname = "m-trainer"\n[tool.setuptools.packages.find]\nwhere = ["src"]\n',
        "src/m_trainer/__init__.py": "",
        "src/m_trainer/cli.py": "import argparse, yaml\np = argparse.ArgumentParser()\np.add_argument('--config')\n"
        "a = p.parse_args()\ncfg = yaml.safe_load(open(a.config))\nprint(cfg.pop('trainer', None))\n",
        "configs/dpo.yaml": lf + "trainer:\n  distributed_backend: accelerate\n",
        "deploy/run.sh": '#!/bin/bash\ncd "$(dirname "$0")/.."\npython -m m_trainer.cli --config configs/dpo.yaml\n',
        "deploy/gone.sh": '#!/bin/bash\ncd "$(dirname "$0")/.."\npython -m other_cli.main --config configs/dpo.yaml\n',
    }
    found = {
        f["path"].rsplit("/", 1)[-1] + ":" + f["message"].split("(")[-1][:40]: f["severity"]
        for f in check_findings(capsys, write_tree(tmp_path, files))
        if f["code"] == "PK207"
    }
    assert list(found.values()) == ["warning"], found
    assert "its code is not in the checkout" in next(iter(found)), found


def test_a_script_run_by_bash_file_has_that_file_as_its_dollar_zero(tmp_path: Path, capsys) -> None:
    """AlexJJ009/dpo-exp: platform/jupyter.sh `cd "$(dirname "$0")/.."` then `bash experiments/x.sh`, whose
    `source "$(dirname "$0")/run_code_dpo.sh"` reads experiments/run_code_dpo.sh (bash's $0 is the file as named)."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "platform/run.sh": '#!/bin/bash\ncd "$(dirname "$0")/.."\nbash experiments/child.sh\n',
            "experiments/child.sh": '#!/bin/bash\nset -e\nsource "$(dirname "$0")/lib.sh"\necho "$X"\n',
            "experiments/lib.sh": "X=1\n",
        },
    )
    assert [f for f in check_findings(capsys, root) if f["code"] == "PK106"] == []


def test_an_indented_cd_to_a_machine_directory_before_a_source(tmp_path: Path, capsys) -> None:
    """MeridianResearch/geodesic-gpt-neox: `if [ "$SLURM_NNODES" -gt 1 ]; then` / `    cd /home/.../other` /
    `    source ./neox/configs/.../generate_hostfile.sh`: the file is looked up on the machine."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "pretrain_neox.sbatch": '#!/bin/bash\n#SBATCH --nodes=64\nif [ "$SLURM_NNODES" -gt 1 ]; then\n'
            "    cd /home/a5k/filtering\n    source ./neox/configs/isambard/slurm/generate_hostfile.sh\nfi\n",
        },
    )
    (found,) = [f for f in check_findings(capsys, root) if f["code"] == "PK106"]
    assert found["severity"] == "info" and "/home/a5k/filtering" in found["message"], found


def test_a_value_the_callee_s_option_loop_takes_from_a_followed_caller_is_an_override(tmp_path: Path, capsys) -> None:
    """AlibabaPAI/Megatron's examples/run-megatron.sh parses its own options (`--train-iters) TRAIN_ITERS="$2";
    shift`) and passes `--train-iters 10000 ... --train-iters ${TRAIN_ITERS}`; examples/llama3-8b.sh runs it with
    `--train-iters 100`: the caller's override, not a repeat (a literal repeat in the callee still is one)."""
    body = (
        '#!/bin/bash\nTRAIN_ITERS=10000\nwhile [[ $# -gt 0 ]]; do\n  case "$1" in\n'
        '    --train-iters) TRAIN_ITERS="$2"; shift ;;\n  esac\n  shift\ndone\n'
        "torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --global-batch-size 8 \\\n"
        "    --train-iters 10000 --lr 1e-4 --train-iters ${TRAIN_ITERS} {tail}\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "examples/run-megatron.sh": body.replace("{tail}", ""),
            "examples/repeat.sh": body.replace("{tail}", "--lr 2e-4"),
            "examples/llama3-8b.sh": "#!/bin/bash\nbash examples/run-megatron.sh --train-iters 100\n"
            "bash examples/repeat.sh --train-iters 100\n",
        },
    )
    found = {(f["path"].rsplit("/", 1)[-1], f["message"].split()[0]) for f in check_findings(capsys, root)}
    found = {x for x in found if x[1].startswith("--")}
    assert found == {("repeat.sh", "--lr")}, found


def test_a_file_given_to_a_program_the_script_writes_at_run_time_is_the_machine_s(tmp_path: Path, capsys) -> None:
    """Anogibot/PRPO eval/run_eval_dx_llava.sh: `INPUT_DATASET="../../df_data/.../x.json"` (checked with `-f` by the
    script), then `python "$TEMP_SCRIPT" "$INPUT_DATASET" ...` with TEMP_SCRIPT=/tmp/create_questions_$$.py: the
    program is not the checkout's, so what it reads is the machine's."""
    script = (
        '#!/bin/bash\nINPUT_DATASET="{path}"\nif [[ ! -f "$INPUT_DATASET" ]]; then echo missing; exit 1; fi\n'
        'TEMP_SCRIPT="/tmp/create_questions_$$.py"\ncat > "$TEMP_SCRIPT" << \'PY\'\nimport sys\nprint(sys.argv)\nPY\n'
        'python "$TEMP_SCRIPT" "$INPUT_DATASET" out.jsonl 1000 42\n'
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "eval/run_eval.sh": script.format(path="../../df_data_reasoning/ddim_subset_1000.json"),
            "eval/run_in.sh": script.format(path="data/subset_1000.json"),
            # without the script's own -f test (which alone keeps the launch from a missing file: the fourteenth
            # holdout's jdchawla29/reinforcesight), the file is reported, as the machine's
            "eval/unguarded.sh": script.format(path="data/subset_1000.json").replace(
                'if [[ ! -f "$INPUT_DATASET" ]]; then echo missing; exit 1; fi\n', ""
            ),
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK601"}
    assert {k: f["severity"] for k, f in found.items()} == {"unguarded.sh": "info"}, found
    assert "the program the launch runs is not known" in found["unguarded.sh"]["message"], found
