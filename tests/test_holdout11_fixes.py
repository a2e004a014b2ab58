"""Mechanisms the holdouts of the 0.3.4 round left open and the eleventh holdout found, each in its repository's shape:

- AaronJi/MeGan's training_scripts/qwen7b_sft_template.sh builds its optional flags by successive appends
  (`FLAG_AGRS="$FLAG_AGRS --firefly"` in one `if`, `FLAG_AGRS="$FLAG_AGRS --multi_instructions"` in the next) and
  passes `$FLAG_AGRS` unquoted: every word of the value was located at the last append, so a finding on `--firefly`
  pointed at the line that adds `--multi_instructions`."""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import check_findings, write_tree

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
