"""A script bash rejects although tree-sitter-bash parses it without an error node (issue 26, "bash as bash").

OptimalScale/LMFlow scripts/run_merge_lora.sh: the last line of an `if` body ends in `\\`, so the next line's
`elif [ ... ]` become words of the command and `then` stands where a command goes; tree-sitter-bash reads `then`
as a command's name, bash says "syntax error near unexpected token `then'" and runs nothing of the top-level
`if` nor anything after it. bash is the oracle: each fixture is given to the real `bash -n`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from packlint.cli import main

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")

MERGE_LORA = """\
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", type=str, required=True)
parser.add_argument("--lora_model_path", type=str, required=True)
parser.add_argument("--output_model_path", type=str, required=True)
parser.add_argument("--device", type=str, default="cpu", choices=["cpu", "gpu"])
parser.add_argument("--ds_config", type=str, default="configs/ds_config_eval.json")
args = parser.parse_args()
"""

# run_merge_lora.sh's shape: option parsing, then the broken `if` (line 17 is the `elif`); one launch before it
SCRIPT = """\
#!/bin/bash
model_name_or_path=gpt2
lora_model_path=output_models/lora
output_model_path=output_models/merge_lora
device=cpu
python examples/merge_lora.py --model_name_or_path gpt2 --lora_model_path a --output_model_path b --devise cpu

while [[ $# -ge 1 ]]; do
  key="$1"
  case ${key} in
    --device) device="$2"; shift ;;
    *) echo "error: unknown option \\"${key}\\"" 1>&2; exit 1 ;;
  esac
  shift
done

if [ ${device} == "cpu" ]; then
    python examples/merge_lora.py \\
        --model_name_or_path ${model_name_or_path} \\
        --lora_model_path ${lora_model_path} \\
        --output_model_path ${output_model_path} \\
        --device ${device} \\
{ELIF}elif [ ${device} == "gpu" ]; then
    echo "Error: Merging LoRA weights using gpu not supported yet. Please use cpu."
else
    echo "Error: Unknown device \\"${device}\\"" 1>&2
    exit 1
fi
python examples/merge_lora.py --model_name_or_path gpt2 --lora_model_path a --output_model_path b --devices cpu
"""


def _checkout(tmp_path: Path, script: str) -> Path:
    root = tmp_path / "LMFlow"
    (root / ".git").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "examples" / "merge_lora.py").write_text(MERGE_LORA)
    (root / "scripts").mkdir()
    path = root / "scripts" / "run_merge_lora.sh"
    path.write_text(script)
    return path


def _bash_n(path: Path) -> tuple[int, str]:
    proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=20)
    return proc.returncode, proc.stderr


def _check(capsys, path: Path) -> list[dict]:
    capsys.readouterr()
    main(["check", "--isolated", "--no-cache", "--format", "json", "--exit-zero", str(path)])
    return json.loads(capsys.readouterr().out)["findings"]


def test_a_continuation_into_elif_is_the_syntax_error_bash_reports(tmp_path, capsys):
    path = _checkout(tmp_path, SCRIPT.replace("{ELIF}", ""))
    rc, err = _bash_n(path)
    assert rc != 0 and "line 23: syntax error near unexpected token `then'" in err  # the oracle
    found = [(f["code"], f["line"]) for f in _check(capsys, path) if f["severity"] != "info"]
    # PK900 at bash's line; the launch before the `if` still runs (its typo'd flag is still an error); nothing of
    # the `if` (no PK202 on `--device cpu elif [ ... ]`) nor after it (the second typo) is reported
    assert ("PK900", 23) in found
    assert ("PK201", 6) in found
    assert [c for c in found if c[0] != "PK900" and c[1] >= 16] == [], found


@pytest.mark.parametrize(
    "fixed",
    [
        "        --ds_config configs/ds.json\n",  # the author's intent: the continuation ends the command
        "        # (no more flags)\n",
    ],
)
def test_the_same_shape_bash_accepts_is_checked_as_before(tmp_path, capsys, fixed):
    path = _checkout(tmp_path, SCRIPT.replace("{ELIF}", fixed))
    assert _bash_n(path)[0] == 0
    found = [(f["code"], f["line"]) for f in _check(capsys, path) if f["severity"] != "info"]
    assert not [c for c in found if c[0] == "PK900"], found
    assert ("PK201", 6) in found and any(c[0] == "PK201" and c[1] > 25 for c in found), found


def test_a_quoted_reserved_word_is_a_command_bash_runs(tmp_path, capsys):
    # `"then"` is an ordinary command name for bash (command not found at run time): no syntax error
    path = _checkout(tmp_path, '#!/bin/bash\n"then" --x\nfi_cleanup() { :; }\nfi_cleanup\n')
    assert _bash_n(path)[0] == 0
    assert not [f for f in _check(capsys, path) if f["code"] == "PK900"]


def test_a_script_that_turns_extglob_on_is_parsed_with_it(tmp_path, capsys):
    """Tele-AI/TeleChat2 mindformers-telechat/scripts/run_distribute.sh (the MindFormers shape): `shopt -s extglob`
    at the top, then `rm -rf ./mf_parallel$i/!(rank_*)` inside an `if`. bash runs the shopt before it parses the
    `if`, so the script runs (real bash is the oracle); plain `bash -n` runs no shopt and rejects it (a false PK900).
    Without the shopt the script really does not parse."""
    import json
    import subprocess

    from packlint.cli import main

    for shopt, rejected in (("shopt -s extglob\n", False), ("", True)):
        script = tmp_path / f"run_{bool(shopt)}.sh"
        script.write_text(
            f"#!/bin/bash\n{shopt}for i in 0 1; do\n  if true; then\n    rm -rf ./mf_parallel$i/!(rank_*)\n  fi\ndone\n"
        )
        real = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, timeout=60)
        assert (real.returncode != 0) == rejected, real.stderr
        capsys.readouterr()
        main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(script)])
        codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
        assert ("PK900" in codes) == rejected, codes
