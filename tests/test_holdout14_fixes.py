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
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.check_helpers import check_findings, hf_program, write_tree

GIT = shutil.which("git")


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
        _git(root, *args)
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
        _git(root, *args)
    found = [f["message"].split(" ", 1)[0] for f in check_findings(capsys, root / "fan.sh") if f["code"] == "PK203"]
    assert found == ["MY_OWN_SETTING"]


def _git(repo: Path, *args: str) -> None:
    assert GIT is not None
    subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


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
