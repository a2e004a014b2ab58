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
"""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import argparse_program, check_findings, write_tree


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
