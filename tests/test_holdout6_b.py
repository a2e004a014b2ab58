"""Mechanisms behind false findings the sixth holdout (h-holdout-k, h-holdout-l) found in the program and stack
lookup, each in the shape of the repository it stands for, with the true finding of the same shape kept."""

from __future__ import annotations

import json
from pathlib import Path

from packlint.cli import main


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _findings(capsys, *paths: Path) -> list[dict]:
    capsys.readouterr()
    main(["check", "--no-cache", "--format", "json", "--exit-zero", *map(str, paths)])
    return json.loads(capsys.readouterr().out)["findings"]


_OPENRLHF_DPO = """import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--save_path", type=str, default="./ckpt")
    parser.add_argument("--flash_attn", action="store_true", default=False)
    args = parser.parse_args()
"""


def test_a_program_is_looked_up_in_the_folder_a_cd_before_the_launch_entered(tmp_path, capsys):
    """SeanLeng1/Reward-Calibration: scripts/general_scripts/train-dpo-llama.sh does `cd OpenRLHF` then
    `deepspeed --module openrlhf.cli.train_dpo ... --flash_attn`; the checkout's OpenRLHF/ is OpenRLHF 0.3.8, whose
    train_dpo.py defines --flash_attn. The cd was ignored, the snapshots (0.8.11+) were used: 3 false PK201. The
    program is the vendored file (module or relative path), and a flag it lacks is still an error."""
    root = _tree(
        tmp_path / "Reward-Calibration",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "OpenRLHF/version.txt": "0.3.8\n",
            "OpenRLHF/openrlhf/__init__.py": "",
            "OpenRLHF/openrlhf/cli/__init__.py": "",
            "OpenRLHF/openrlhf/cli/train_dpo.py": _OPENRLHF_DPO,
            "scripts/general_scripts/train-dpo-llama.sh": (
                "#!/bin/bash\nset -x\ncd OpenRLHF\nread -r -d '' training_commands <<EOF\nopenrlhf.cli.train_dpo \\\n"
                "   --save_path ./ckpt/7b_llama_dpo \\\n   --flash_attn\nEOF\n\ndeepspeed --module $training_commands\n"
            ),
            "scripts/general_scripts/train_rm.sh": (
                "#!/bin/bash\ncd OpenRLHF\npython openrlhf/cli/train_dpo.py --save_path x --flash_attn --bogus\n"
            ),
        },
    )
    found = _findings(capsys, root / "scripts")
    got = sorted((Path(f["path"]).name, f["code"], f["severity"], f["message"].split(" ")[0]) for f in found)
    assert got == [("train_rm.sh", "PK201", "error", "--bogus")], found
    assert "OpenRLHF/openrlhf/cli/train_dpo.py" in found[0]["message"]
