"""Mechanisms the fifteenth holdout (on the released 0.3.7) found, each in its repository's shape:

- mlcommons/training_results_v5.1's HPE llama3_8b config exports WARMUP_STEPS=80, reads it bare in
  `export OPT_LR_DECAY_STEPS=$((MAX_STEPS-WARMUP_STEPS))`, then exports WARMUP_STEPS=16: PK105 said the first value
  is lost before anything read it (a name in arithmetic is read without a `$`).
- mlcommons/training_results_v3.0's Dell `run_and_time_multi.sh` sources `./config_${DGXSYSTEM}.sh`; DGXSYSTEM comes
  from the caller's environment (each config exports it): PK106 warned that `./config_.sh` is missing.
- TensorFlow's CI scripts (vendored in a bazel cache of training_results_v2.1) source `tools/python_bin_path.sh`, which
  the checkout's own `configure.py` writes: a file made at set-up.
- training_results_v3.1's Lenovo result folders keep byte copies of `scripts/config_*.sh`, which source
  `$(dirname ${BASH_SOURCE[0]})/config_common.sh`: the copies are records, the file exists beside the one run.
- AlibabaResearch/DAMO-ConvAI: `--output_dir $"${CKPT}-${TASK}"` (bash's translated string) is one word; its dial2vec
  program rewrites `args.config_file = os.path.join(work_dir, "model", args.config_file)` before opening it.
- JiuhaiChen/Florence-VL: `cd` into a folder the set-up makes, then `python eval/eval.py` (GQA's own).
- baaivision/DenseFusion: `--report_to wandb tensorboard` with transformers==4.31.0 (a list there).
- intel/neural-compressor's 3dunet example exports nnUNet_preprocessed and RESULTS_FOLDER, read by the nnunet package.
"""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import argparse_program, check_findings, hf_program, write_tree


def _pk(findings: list[dict], code: str) -> list[tuple[str, str]]:
    return sorted((f["path"].rsplit("/", 1)[-1], f["severity"]) for f in findings if f["code"] == code)


def test_a_bare_name_read_in_arithmetic_is_a_read(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "config_XD670.sh": "export MAX_STEPS=800\nexport WARMUP_STEPS=80\n"
            "export OPT_LR_DECAY_STEPS=$((MAX_STEPS-WARMUP_STEPS))\nexport WARMUP_STEPS=16\n",
            "subscript.sh": "export I=1\nexport PICK=${ARR[I]}\nexport I=2\n",
            # nothing reads it in between: still lost
            "lost.sh": "export MAX_STEPS=800\nexport WARMUP_STEPS=80\n"
            "export OPT_LR_DECAY_STEPS=$((MAX_STEPS-100))\nexport WARMUP_STEPS=16\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK105") == [("lost.sh", "warning")]


def test_a_sourced_name_from_a_variable_the_script_never_sets_is_the_environments(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "bert/run_and_time_multi.sh": "#!/bin/bash\nsource ./config_${DGXSYSTEM}.sh\npython train.py --lr $LR\n",
            "bert/config_1xR750.sh": "export DGXSYSTEM=1xR750\nexport LR=1\n",
            "bert/train.py": argparse_program("--lr"),
            # a name the script sets and gets wrong is still the checkout's mistake
            "bert/run_set.sh": "#!/bin/bash\nDGXSYSTEM=2xR750\nsource ./config_${DGXSYSTEM}.sh\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK106") == [("run_and_time_multi.sh", "info"), ("run_set.sh", "warning")]


def test_a_sourced_file_the_checkouts_set_up_writes_is_the_machines(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "configure.py": "import os\n_ROOT = os.path.dirname(__file__)\n"
            "with open(os.path.join(_ROOT, 'tools', 'python_bin_path.sh'), 'w') as f:\n"
            "    f.write('export PYTHON_BIN_PATH=python')\n",
            "tools/ci_build/builds/pip.sh": '#!/bin/bash\nsource tools/python_bin_path.sh\n"$PYTHON_BIN_PATH" -c 1\n',
            "setup.sh": "#!/bin/bash\necho 'export CUDA_HOME=/usr/local/cuda' > env_vars.sh\n",
            "train.sh": "#!/bin/bash\nsource ./env_vars.sh\npython -c 1\n",
            # named in a program that writes nothing: still missing
            "docs.py": "print('source settings.sh first')\n",
            "other.sh": "#!/bin/bash\nsource ./settings.sh\npython -c 1\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK106") == [
        ("other.sh", "warning"),
        ("pip.sh", "info"),
        ("train.sh", "info"),
    ]


def test_a_byte_copy_of_a_config_kept_for_the_record_is_not_the_one_run(tmp_path: Path, capsys) -> None:
    config = "source $(dirname ${BASH_SOURCE[0]})/config_common.sh\nexport MAX_STEPS=1000\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "Lenovo/bert/impl/config_SR675.sh": config,
            "Lenovo/bert/impl/scripts/config_SR675.sh": config,
            "Lenovo/bert/impl/scripts/config_common.sh": "export NCCL_SOCKET_IFNAME=eth0\n",
            # a copy that differs is its own file: its missing sibling is reported
            "Lenovo/rnnt/impl/config_SR675.sh": config + "export EXTRA=1\n",
            "Lenovo/rnnt/impl/scripts/config_SR675.sh": config,
            "Lenovo/rnnt/impl/scripts/config_common.sh": "export NCCL_SOCKET_IFNAME=eth0\n",
        },
    )
    found = sorted(
        (f["path"].split("Lenovo/", 1)[-1], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK106"
    )
    assert found == [("bert/impl/config_SR675.sh", "info"), ("rnnt/impl/config_SR675.sh", "warning")]


def test_a_program_run_in_a_folder_the_set_up_makes_is_the_machines(tmp_path: Path, capsys) -> None:
    # JiuhaiChen/Florence-VL (LLaVA's gqa.sh): `cd $GQADIR` into GQA's data folder, then GQA's own `eval/eval.py`
    two_positionals = "import argparse\np = argparse.ArgumentParser()\np.add_argument('a')\np.add_argument('b')\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "scripts/v1_5/eval/eval.py": two_positionals + "p.parse_args()\n",
            "scripts/v1_5/eval/gqa.sh": '#!/bin/bash\nGQADIR="./playground/data/eval/gqa/data"\ncd $GQADIR\n'
            "python eval/eval.py --tier testdev_balanced\n",
            # a folder the checkout has: its program is the one that runs
            "scripts/v1_5/eval/tools/eval/eval.py": two_positionals + "p.parse_args()\n",
            "scripts/v1_5/eval/here.sh": "#!/bin/bash\ncd tools\npython eval/eval.py --tier testdev_balanced\n",
        },
    )
    found = _pk(check_findings(capsys, root), "PK201")
    assert found == [("gqa.sh", "info"), ("here.sh", "error")]


def test_a_training_arguments_field_type_rests_on_the_transformers_release(tmp_path: Path, capsys) -> None:
    # baaivision/DenseFusion: `--report_to wandb tensorboard` with transformers==4.31.0, where report_to was a list
    program = (
        "from dataclasses import dataclass, field\nimport transformers\nfrom transformers import HfArgumentParser\n\n\n"
        "@dataclass\nclass ModelArguments:\n    model_name_or_path: str = field(default='m')\n\n\n"
        "HfArgumentParser((ModelArguments, transformers.TrainingArguments)).parse_args_into_dataclasses()\n"
    )
    launch = (
        "torchrun --nproc_per_node=2 train.py --model_name_or_path m --output_dir out --report_to wandb tensorboard\n"
    )
    severities = {}
    for pin in ("4.31.0", "4.46.3", None):
        root = tmp_path / str(pin)
        deps = f'dependencies = ["transformers=={pin}"]\n' if pin else ""
        write_tree(
            root,
            {
                ".git/HEAD": "",
                "train.py": program,
                "run.sh": launch,
                "pyproject.toml": "[project]\nname = 'x'\n" + deps,
            },
        )
        found = [f for f in check_findings(capsys, root) if f["code"] == "PK202"]
        severities[pin] = [f["severity"] for f in found]
        if pin is None:
            assert "packlint has a snapshot of" in found[0]["message"]
    # outside the snapshots: not known; a snapshot release: a verdict; no pin: the assumption, named
    assert severities == {"4.31.0": [], "4.46.3": ["error"], None: ["warning"]}


def test_a_translated_string_is_one_word(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "MMLatentAction/train.py": argparse_program("--output_dir", "--tag"),
            "MMLatentAction/run_RL.sh": 'CKPT="ckpt"\nTASK=MMRole\npython train.py --output_dir $"${CKPT}-${TASK}" '
            '--tag x$"y z"\n',
            # an unquoted variable of two words is still two
            "MMLatentAction/run_bad.sh": 'CKPT="a b"\npython train.py --output_dir $CKPT\n',
        },
    )
    found = [(f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, root) if f["severity"] != "info"]
    assert found == [("run_bad.sh", "PK202")]


def test_a_config_path_the_program_rebuilds_is_not_the_one_looked_for(tmp_path: Path, capsys) -> None:
    program = (
        "import argparse, json, os\np = argparse.ArgumentParser()\n"
        "p.add_argument('--config_file', default='model/plato/config.json', type=str)\n"
        "p.add_argument('--vocab_file', default='vocab.json', type=str)\nargs = p.parse_args()\n"
        "work_dir = os.path.dirname(os.path.realpath(__file__))\n"
        "args.config_file = os.path.join(work_dir, 'model', args.config_file)\n"
        "cfg = json.load(open(args.config_file))\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "dial2vec/run.py": program,
            "dial2vec/scripts/train/run_plato.sh": '#!/bin/bash\npython3 run.py --config_file "plato/config.json"\n',
            # a flag the code does not rebuild
            "dial2vec/scripts/train/run_vocab.sh": '#!/bin/bash\npython3 run.py --config_file "plato/config.json" '
            "--vocab_file gone.json\n",
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["message"].split(" is not found")[0].rsplit(" ", 1)[-1])
        for f in check_findings(capsys, root)
        if f["code"] == "PK601"
    )
    assert ("run_plato.sh", "plato/config.json") not in found


def test_a_variable_a_package_outside_the_checkout_reads_is_not_dead(tmp_path: Path, capsys) -> None:
    exports = "export nnUNet_preprocessed=/b/pre\nexport RESULTS_FOLDER=/b/res\nexport MY_DEAD=1\n"
    launch = "#!/bin/bash\n" + exports + "python main.py\n"
    main = "from nnunet.paths import preprocessing_output_dir\nprint(preprocessing_output_dir)\n"
    root = write_tree(tmp_path / "a", {".git/HEAD": "", "ptq/main.py": main, "ptq/run_quant.sh": launch})
    unread = [f["message"] for f in check_findings(capsys, root) if f["code"] in ("PK203", "PK205")]
    assert len(unread) == 1 and "MY_DEAD" in unread[0] and "RESULTS_FOLDER" in unread[0]
    assert "nnUNet" not in unread[0]
    readme = "# 3D-UNet\n* `export RESULTS_FOLDER=<path/to/build>/build/result`\n"
    root = write_tree(
        tmp_path / "b", {".git/HEAD": "", "ptq/main.py": main, "ptq/run_quant.sh": launch, "ptq/README.md": readme}
    )
    unread = [f["message"] for f in check_findings(capsys, root) if f["code"] in ("PK203", "PK205")]
    assert len(unread) == 1 and "MY_DEAD" in unread[0] and "RESULTS_FOLDER" not in unread[0]


def test_an_append_reads_the_value_it_adds_to(tmp_path: Path, capsys) -> None:
    # mlcommons/training_results_v4.1's maxdiffusion run.sh
    script = "#!/bin/bash\nexport LIBTPU_INIT_ARGS='--a=true'\nLIBTPU_INIT_ARGS+=' --b=true'\nexport X=1\nexport X+=2\n"
    root = write_tree(
        tmp_path,
        {".git/HEAD": "", "run.sh": script + "export Y=1\nexport Y=2\npython train.py\n", "train.py": "print(1)\n"},
    )
    found = [f["message"].split(" ", 1)[0] for f in check_findings(capsys, root) if f["code"] == "PK105"]
    assert found == ["Y"]


def test_a_config_of_a_program_the_checkout_lacks_is_the_machines(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            # mlcommons' maxdiffusion: a module of the clone the README makes
            "maxdiffusion/run.sh": "#!/bin/bash\npython -m src.maxdiffusion.models.train "
            "src/maxdiffusion/configs/base_2_base.yml run_name=x\n",
            # Supermicro's maskrcnn folder: NVIDIA's container holds tools/ and configs/
            "maskrcnn/run_and_time.sh": "#!/bin/bash\nCMD=( 'python' '-u' '-m' 'bind_launch' --nproc_per_node=8 )\n"
            "\"${CMD[@]}\" tools/train_mlperf.py --config-file 'configs/e2e_mask_rcnn.yaml' DTYPE float16\n",
            # a module the checkout has: its missing config is the checkout's
            "own/src/trainer/__init__.py": "",
            "own/src/trainer/train.py": "import sys\nprint(sys.argv)\n",
            "own/run.sh": "#!/bin/bash\npython -m src.trainer.train src/trainer/configs/gone.yml\n",
        },
    )
    found = sorted(
        (f["path"].rsplit(f"{root.name}/", 1)[-1].split("/", 1)[0], f["severity"])
        for f in check_findings(capsys, root)
        if f["code"] == "PK601"
    )
    assert found == [("maskrcnn", "info"), ("maxdiffusion", "info"), ("own", "warning")]


def test_a_tree_without_a_vcs_marker_does_not_bound_a_sourced_path(tmp_path: Path, capsys) -> None:
    # a copy without its .git (hpc_results' cosmoflow-benchmark, run from its own folder: `. scripts/setup_cori.sh`)
    files = {
        "bench/scripts/setup_cori.sh": "export X=1\n",
        "bench/scripts/train_cori.sh": "#!/bin/bash\n#SBATCH -N 1\n. scripts/setup_cori.sh\nsrun python train.py\n",
        "bench/scripts/gone.sh": "#!/bin/bash\n. scripts/not_here.sh\npython train.py\n",
        "bench/train.py": "print(1)\n",
    }
    loose = write_tree(tmp_path / "copy", files)
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["severity"]) for f in check_findings(capsys, loose) if f["code"] == "PK106"
    )
    assert found == [("gone.sh", "warning"), ("train_cori.sh", "info")]
    kept = write_tree(tmp_path / "repo", {".git/HEAD": "", **files})
    assert [f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, kept) if f["code"] == "PK106"] == ["gone.sh"]


def test_a_parsers_add_argument_taken_as_a_value_adds_its_flags(tmp_path: Path, capsys) -> None:
    # mlcommons' cosmoflow train.py: `add_arg = parser.add_argument`
    program = (
        "import argparse\n\ndef parse_args():\n    parser = argparse.ArgumentParser('train.py')\n"
        "    add_arg = parser.add_argument\n    add_arg('config', nargs='?', default='configs/cosmo.yaml')\n"
        "    add_arg('--data-dir')\n    add_arg('-d', '--distributed', action='store_true')\n"
        "    return parser.parse_args()\n\nprint(parse_args())\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": program,
            "scripts/train_cori.sh": "#!/bin/bash\n#SBATCH -N 1\nsrun python train.py -d --data-dir /data\n",
            "scripts/typo.sh": "#!/bin/bash\nsrun python train.py -d --data-dri /data\n",
        },
    )
    found = [
        (f["path"].rsplit("/", 1)[-1], f["message"].split(" ", 1)[0])
        for f in check_findings(capsys, root)
        if f["code"] == "PK201"
    ]
    assert found == [("typo.sh", "--data-dri")]


def test_where_a_launchers_remainder_starts_after_a_callers_words_is_not_known(tmp_path: Path, capsys) -> None:
    # mlcommons/training_results_v0.6 NVIDIA transformer: bind_launch's `training_script_args` (REMAINDER) after
    # `--nproc_per_node $SLURM_NTASKS_PER_NODE $MULTI_NODE`
    launcher = (
        "from argparse import ArgumentParser, REMAINDER\nparser = ArgumentParser()\n"
        "parser.add_argument('--nproc_per_node', type=int, default=1)\n"
        "parser.add_argument('--nsockets_per_node', type=int, required=True)\n"
        "parser.add_argument('training_script', type=str)\n"
        "parser.add_argument('training_script_args', nargs=REMAINDER)\nprint(parser.parse_args())\n"
    )
    launch = "python -m bind_launch --nsockets_per_node 2 --nproc_per_node $SLURM_NTASKS_PER_NODE $MULTI_NODE \\\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "bind_launch.py": launcher,
            "train.py": "print(1)\n",
            "run_training.sh": "#!/bin/bash\n"
            + launch
            + " train.py ${DATASET_DIR} \\\n  --seed ${SEED} \\\n  --arch big\n",
            # a flag before the script, known words only: the launcher's own
            "run_known.sh": "#!/bin/bash\npython -m bind_launch --nsockets_per_node 2 --seed 1 train.py --arch big\n",
        },
    )
    found = [
        (f["path"].rsplit("/", 1)[-1], f["message"].split(" ", 1)[0])
        for f in check_findings(capsys, root)
        if f["code"] == "PK201"
    ]
    assert found == [("run_known.sh", "--seed")]


def test_a_vendored_verl_copy_that_warns_instead_of_raising_does_not_reject_the_batch(tmp_path: Path, capsys) -> None:
    # uqcxu9/QWEN2.5-7B-VERL_GRPO_V1_8: its verl 0.7.1 copy warns where upstream raises
    check = "        if not self.use_dynamic_bsz:\n            if train_batch_size < self.ppo_mini_batch_size:\n"
    raises = check + "                raise ValueError('train_batch_size must be >= actor.ppo_mini_batch_size')\n"
    warns = check + "                # econ mode inflates the batch\n                import warnings\n"
    warns += "                warnings.warn('train_batch_size < actor.ppo_mini_batch_size')\n"
    launch = (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=1 "
        "actor_rollout_ref.actor.ppo_mini_batch_size=16 trainer.n_gpus_per_node=1\n"
    )
    found = {}
    for name, body in (("raises", raises), ("warns", warns)):
        root = write_tree(
            tmp_path / name,
            {
                ".git/HEAD": "",
                "verl/__init__.py": "",
                "verl/version/version": "0.7.1\n",
                "verl/trainer/__init__.py": "",
                "verl/trainer/main_ppo.py": "def main():\n    pass\n",
                "verl/trainer/ppo/__init__.py": "",
                "verl/trainer/ppo/ray_trainer.py": "class RayPPOTrainer:\n    pass\n",
                "verl/workers/__init__.py": "",
                "verl/workers/config/__init__.py": "",
                "verl/workers/config/actor.py": "class ActorConfig:\n    def _check(self, train_batch_size):\n" + body,
                "train.sh": launch,
            },
        )
        found[name] = [f["code"] for f in check_findings(capsys, root / "train.sh") if f["code"] == "PK453"]
    assert found == {"raises": ["PK453"], "warns": []}


def test_an_hf_parser_given_another_parsers_leftovers_is_not_the_whole_command_line(tmp_path: Path, capsys) -> None:
    # facebookresearch/SpinQuant's utils/process_args.py
    process_args = (
        "import argparse\nfrom dataclasses import dataclass, field\nimport transformers\n\n\n@dataclass\n"
        "class ModelArguments:\n    input_model: str = field(default='x')\n\n\ndef parser_gen():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--w_bits', type=int, default=16)\n"
        "    args, unknown = parser.parse_known_args()\n    return args, unknown\n\n\ndef process_args_ptq():\n"
        "    ptq_args, unknown_args = parser_gen()\n"
        "    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))\n"
        "    return parser.parse_args_into_dataclasses(args=unknown_args)\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "utils/__init__.py": "",
            "utils/process_args.py": process_args,
            "ptq.py": "from utils.process_args import process_args_ptq\n\nprocess_args_ptq()\n",
            "scripts/2_eval_ptq.sh": "torchrun --nproc_per_node=8 ptq.py --input_model m --output_dir out --w_bits 4\n",
            # a flag neither parser defines: the argparse parser passes it on, the HF parser's list is not known
            "scripts/typo.sh": "torchrun --nproc_per_node=8 ptq.py --input_model m --output_dir out --w_bitz 4\n",
        },
    )
    found = [f["message"].split(" ", 1)[0] for f in check_findings(capsys, root) if f["code"] in ("PK201", "PK202")]
    assert found == []


def test_a_2019_megatron_layout_with_its_own_parser_is_not_checked_by_an_installed_megatron(
    tmp_path: Path, capsys
) -> None:
    # uclasystem/bamboo's vendored DeepSpeedExamples/Megatron-LM: its own arguments.py; DeepSpeed imports megatron
    arguments = (
        "import argparse\n\ndef get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--model-parallel-size', type=int, default=1)\n"
        "    p.add_argument('--checkpoint-activations', action='store_true')\n"
        "    p.add_argument('--num-layers', type=int, default=24)\n    p.add_argument('--save', type=str)\n"
        "    p.add_argument('--save-interval', type=int, default=5000)\n    return p.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "Megatron-LM/arguments.py": arguments,
            "Megatron-LM/utils.py": "try:\n    import megatron\nexcept ImportError:\n    megatron = None\n",
            "Megatron-LM/pretrain_gpt2.py": "from arguments import get_args\nimport utils\n\nget_args()\n",
            "Megatron-LM/scripts/pretrain_gpt2.sh": "#!/bin/bash\npython pretrain_gpt2.py --model-parallel-size 1 "
            "--num-layers 24 --save checkpoints/gpt2_345m --checkpoint-activations\n",
        },
    )
    found = [f["code"] for f in check_findings(capsys, root) if f["severity"] != "info"]
    assert found == []


def test_a_relative_source_after_cd_into_a_variable_the_script_never_sets_is_the_machines(
    tmp_path: Path, capsys
) -> None:
    # Azure/azurehpc experimental/io500_benchmark/run_test.sh
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "experimental/io500/run_test.sh": "#!/bin/bash\nN=$1\ncd $HOME\nsource azurehpc/install.sh\n"
            "mpirun -np $N ./bench\n",
            # a folder the script sets itself, to a path the checkout lacks: the checkout's
            "experimental/io500/run_set.sh": "#!/bin/bash\nD=/opt/x\ncd $D/../..\nsource gone/install.sh\n"
            "mpirun ./bench\n",
        },
    )
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK106"
    )
    assert ("run_test.sh", "info") in found and not any(sev != "info" for name, sev in found if name == "run_test.sh")


def test_a_flag_of_a_release_older_than_the_snapshots_is_not_judged_unless_it_is_a_misspelling(
    tmp_path: Path, capsys
) -> None:
    # Camellia86/Full-Agent-RL-OPSD: openrlhf==0.8.9 defines --flash_attn (renamed in 0.8.10, before every snapshot)
    head = "deepspeed --num_gpus 2 --module openrlhf.cli.train_sft --pretrain Qwen/Qwen3-0.6B --dataset d.jsonl "
    found = {}
    for pin in ("0.8.9", "0.8.11"):
        root = write_tree(
            tmp_path / pin,
            {
                ".git/HEAD": "",
                "requirements.txt": f"openrlhf[vllm]=={pin}\n",
                "scripts/train_sft.sh": head + "--flash_attn\n",
                "scripts/typo.sh": head + "--max_lenn 2048\n",
            },
        )
        found[pin] = sorted(
            (f["path"].rsplit("/", 1)[-1], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK201"
        )
    assert found["0.8.9"] == [("typo.sh", "warning")]
    assert found["0.8.11"] == [("train_sft.sh", "error"), ("typo.sh", "error")]


def test_a_single_dash_option_abbreviates_a_longer_one(tmp_path: Path, capsys) -> None:
    # DeepSpeedExamples' pipeline_parallelism/run.sh: `-r 3` for the program's `-rl`
    program = "import argparse\np = argparse.ArgumentParser()\np.add_argument('-s', type=int)\n"
    program += "p.add_argument('-rl', type=int)\np.add_argument('--debug', action='store_true')\np.parse_args()\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "transformer.py": program,
            "run.sh": "#!/bin/bash\npython -u transformer.py -s 4 --debug -r 3\n",
            "bad.sh": "#!/bin/bash\npython -u transformer.py -s 4 -x 3\n",
        },
    )
    found = [
        (f["path"].rsplit("/", 1)[-1], f["message"].split(" ", 1)[0])
        for f in check_findings(capsys, root)
        if f["code"] == "PK201"
    ]
    assert found == [("bad.sh", "-x")]


def test_a_cd_into_the_home_folder_is_not_a_folder_the_set_up_makes(tmp_path: Path, capsys) -> None:
    # PKU-YuanGroup/MoE-LLaVA's scripts: `cd ~/MoE-LLaVA`, the checkout itself on the author's machine
    program = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\np.parse_args()\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "moellava/train/train_mem.py": program,
            "scripts/finetune.sh": "#!/bin/bash\ncd ~/MoE-LLaVA\npython moellava/train/train_mem.py --lr 1 --bogus 2\n",
        },
    )
    found = [(f["code"], f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK201"]
    assert found == [("PK201", "error")]


def test_an_unknown_word_of_a_remote_command_string_keeps_its_place(tmp_path: Path, capsys) -> None:
    # MooreThreads/MT-MegatronLM: `ssh -f -n $host $cmd_ssh`, cmd_ssh="bash -c 'cd $WORK_HOME; bash $SCRIPT ...'"
    dist = (
        '#!/bin/bash\nWORK_HOME="$PWD"\n'
        "cmd_ssh=\"bash -c 'cd $WORK_HOME; bash ./sub/run.sh $WORK_HOME /data/x_text_document 4 1 > log 2>&1'\"\n"
        "ssh -f -n host1 $cmd_ssh\n"
    )
    run = (
        "#!/bin/bash\nWORK_HOME=$1\nDATA_DIR=$2\nTP_SIZE=$3\nPP_SIZE=$4\ntorchrun --nproc_per_node 8 "
        "$WORK_HOME/pretrain_gpt.py --num-layers 2 --sequence-parallel --tensor-model-parallel-size $TP_SIZE "
        "--pipeline-model-parallel-size $PP_SIZE --data-path $DATA_DIR\n"
    )
    root = write_tree(tmp_path, {".git/HEAD": "", "dist.sh": dist, "sub/run.sh": run})
    found = [f["code"] for f in check_findings(capsys, root / "dist.sh") if f["code"] == "PK310"]
    assert found == []


def test_words_after_one_a_variable_the_script_never_sets_gave_none_rest_on_the_machine(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    # omron-sinicx/WhereIsTheAnswer: `bash run_scripts/run_train.sh 8 $PATH_TO_SAVE_MODEL ./ds.json ...`
    program = argparse_program("--output_dir", "--path_doc_train", "--logging_steps", "--max_steps")
    program = program.replace("p.parse_args()", "p.add_argument('--deepspeed', action='store_true')\np.parse_args()")
    train = (
        "#!/bin/bash\nCUSTOM_COMMAND=${@:4}\ndeepspeed --num_gpus=$1 train.py --output_dir $2 --deepspeed $3 "
        "--logging_steps 10 ${CUSTOM_COMMAND}\n"
    )
    call = "bash run_scripts/run_train.sh 8 {} ./ds.json --path_doc_train film.jsonl --max_steps 3000\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": program,
            "ds.json": "{}\n",
            "run_scripts/run_train.sh": train,
            "run_scripts/run_all.sh": "#!/bin/bash\n" + call.format("$PATH_TO_SAVE_MODEL"),
            # the script sets it: the words stand where they are, and a real mistake is still an error
            "run_scripts/run_set.sh": "#!/bin/bash\nOUT=/out\n" + call.format("$OUT").replace("3000", "3000 --bogus"),
        },
    )
    monkeypatch.chdir(root)  # (the scripts run from the checkout's root, as its README says)
    found = sorted(
        (f["path"].rsplit("/", 1)[-1], f["code"], f["severity"])
        for f in check_findings(capsys, Path("run_scripts/run_all.sh"), Path("run_scripts/run_set.sh"))
        if f["code"] in ("PK201", "PK202")
    )
    assert all(sev == "info" for name, _code, sev in found if name in ("run_all.sh", "run_train.sh")), found
    assert ("run_set.sh", "PK201", "error") in found, found


def test_a_file_an_earlier_command_writes_under_a_folder_built_from_another_variable(tmp_path: Path, capsys) -> None:
    # taokz/BiomedGPT's scripts/text_sum/evaluate_meqsum.sh: `result_path=../../results/meqsum/${scale}` in a loop
    evaluate = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--results-path')\np.parse_args()\n"
    loop = (
        "#!/bin/bash\nfor scale in tiny base; do\n  result_path=./results/meqsum/${scale}\n"
        "  python3 evaluate.py --results-path=${result_path}\n"
        "  python3 score.py ${result_path}/test_predict.json\ndone\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "evaluate.py": evaluate,
            "score.py": "import sys\nprint(sys.argv)\n",
            "evaluate_meqsum.sh": loop,
            # the loop's words from an array, as BiomedGPT writes them
            "evaluate_array.sh": loop.replace(
                "for scale in tiny base;", "declare -a Scale=('tiny' 'base')\nfor scale in ${Scale[@]};"
            ),
            # a file under another folder is still missing
            "other.sh": loop.replace("${result_path}/test_predict.json", "./gold/test_predict.json"),
        },
    )
    found = sorted({f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root) if f["code"] == "PK601"})
    assert found == ["other.sh"]


def test_a_parameter_string_that_overrides_the_commands_own_value_is_not_a_repeat(tmp_path: Path, capsys) -> None:
    # Khadgar123/ThinkStream's scripts/sft_per_timestep.sh: `extra_args` per phase, appended after the base values
    head = "#!/bin/bash\n# NB: extra_args OVERRIDES the base --save_strategy below on purpose\n"
    head += 'extra_args="--save_strategy steps --save_steps 50"\n'
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": hf_program(),
            "sft.sh": head
            + "torchrun --nproc_per_node=2 train.py --output_dir out --save_strategy epoch ${extra_args}\n",
            # written twice in the command itself: a repeat
            "twice.sh": "#!/bin/bash\ntorchrun --nproc_per_node=2 train.py --output_dir out --save_strategy epoch "
            "--save_strategy steps\n",
        },
    )
    found = [f["path"].rsplit("/", 1)[-1] for f in check_findings(capsys, root) if f["code"] == "PK103"]
    assert found == ["twice.sh"]


def test_an_unknown_flag_form_key_is_reported_at_the_key(tmp_path: Path, capsys) -> None:
    # qhy991/GRPO-Clean-2: `swift sft ... --dataset_path "${DATASET_PATH}"`, the value assigned 5 lines above
    script = (
        '#!/bin/bash\nDATASET_PATH="/home/u/data/train.jsonl"\nOUT=./out\n\nswift sft \\\n'
        '    --model Qwen/Qwen2.5-7B-Instruct \\\n    --dataset_path "${DATASET_PATH}" \\\n    --output_dir "${OUT}"\n'
    )
    root = write_tree(tmp_path, {".git/HEAD": "", "requirements.txt": "ms-swift==3.8.3\n", "run.sh": script})
    found = [(f["line"], f["column"]) for f in check_findings(capsys, root) if f["code"] == "PK207"]
    assert found == [(7, 5)]
