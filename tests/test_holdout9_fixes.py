"""Mechanisms the ninth holdout (h-holdout-q) found on the final tree, each in its repository's shape:

- jchy20/how-much-backtrack carries reasoning-gym's eval/eval.sh: `python eval.py --config "eval_basic.json"`, whose
  eval.py iterates a JSON *list* of dataset configs. For a program of no known stack, PK602 said "the file's top
  level is not a mapping: the stack's loader rejects it"; no stack loader reads it.
- IsTianSheng/LONG1k-32B's train/sft.sh runs `train/sft.py` (found only from the checkout's root) with `--deepspeed
  ../examples/deepspeed/ds_z3_offload_config.json`: from the root that path is outside the checkout (LLaMA-Factory's
  tree, which the README says the repository sits in). PK601 said "not found" as a warning; the same file named by an
  absolute path was already an info (the machine's)."""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import check_findings, hf_program, write_tree


def test_a_json_list_for_a_program_of_no_stack_is_that_program_s_business(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "eval/eval.py": "import argparse, json\np = argparse.ArgumentParser()\np.add_argument('--config')\n"
            "a = p.parse_args()\nfor cfg in json.load(open(a.config)):\n    print(cfg['name'])\n",
            "eval/eval_basic.json": '[{"name": "letter_counting", "size": 50}]\n',
            "eval/eval.sh": '#!/bin/bash\ncd "$(dirname "$0")"\npython eval.py --config "eval_basic.json"\n',
            # (a stack's own config that is no mapping is still rejected by its loader)
            "ds/run.sh": "#!/bin/bash\ndeepspeed train.py --deepspeed ds.json\n",
            "ds/train.py": "import argparse\nimport deepspeed\np = argparse.ArgumentParser()\n"
            "p = deepspeed.add_config_arguments(p)\np.parse_args()\n",
            "ds/ds.json": "[1, 2]\n",
        },
    )
    found = [(f["path"].rsplit("/", 1)[-1], f["code"]) for f in check_findings(capsys, root) if f["code"] == "PK602"]
    assert ("eval_basic.json", "PK602") not in found, found


def test_a_relative_path_out_of_the_checkout_from_where_the_launch_runs_is_the_machine_s(
    tmp_path: Path, capsys
) -> None:
    prog = hf_program("model_name")
    launch = "#!/bin/bash\ntorchrun --nproc-per-node 8 train/sft.py --model_name m --deepspeed {} --output_dir o\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train/sft.py": prog,
            "train/sft.sh": launch.format("../examples/deepspeed/ds_z3_offload_config.json"),
            "train/sft_in.sh": launch.format("configs/ds_missing.json"),
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK601"}
    assert found["sft.sh"]["severity"] == "info", found["sft.sh"]
    assert "outside the checkout" in found["sft.sh"]["message"], found["sft.sh"]["message"]
    assert found["sft_in.sh"]["severity"] != "info", found["sft_in.sh"]  # (inside the checkout: missing there)


def test_a_relative_config_of_a_program_outside_the_checkout_is_the_machine_s(tmp_path: Path, capsys) -> None:
    """orange-city/llama_factory_nli setup/train.sh (the tenth holdout): `torchrun
    /data/sunhao/code/LLaMA-Factory/src/llamafactory/launcher.py ... --dataset nli --deepspeed
    examples/deepspeed/ds_z3_config.json`: the job starts in that outside tree, so whether the relative file is there
    is the machine's (an info, as for the absolute path)."""
    launch = (
        "#!/bin/bash\ntorchrun --nproc_per_node 4 /data/user/LLaMA-Factory/src/llamafactory/launcher.py "
        "--model_name_or_path m --stage sft --do_train true --dataset nli --template llama3 --finetuning_type full "
        "--output_dir o --deepspeed {}\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "setup/train.sh": launch.format("examples/deepspeed/ds_z3_config.json"),
            "setup/train_abs.sh": launch.format("/data/user/LLaMA-Factory/examples/deepspeed/ds_z3_config.json"),
        },
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK601"}
    assert {k: f["severity"] for k, f in found.items()} == {"train.sh": "info", "train_abs.sh": "info"}, found
