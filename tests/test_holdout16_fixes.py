"""Mechanisms the fifteenth holdout's fourth part and the sixteenth holdout (on the released 0.3.8) found, each in
its repository's shape:

- JHU-CLSP/verifiable-by-design's `best_of_n_to_paired_gen.sh` runs `python best_of_n_to_paired_gen.py
  data/nq/dev_model-gemma2-9b-it_concise_gr_bestof32_quip.json ...`: the program's argparse parser takes the words
  as `input_files` (nargs='+'), the outputs of the checkout's own earlier pipeline steps. PK601 warned that "the
  config file" is missing: a data input is made at set-up, so its absence depends on the machine.
"""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import argparse_program, check_findings, write_tree


def _pk(findings: list[dict], code: str) -> list[tuple[str, int, str]]:
    return sorted((f["path"].rsplit("/", 1)[-1], f["line"], f["severity"]) for f in findings if f["code"] == code)


_POSITIONAL_PROGRAM = (
    "import argparse, json\np = argparse.ArgumentParser()\n"
    "p.add_argument('input_files', nargs='+', help='generation file')\np.add_argument('--output_dir')\n"
    "a = p.parse_args()\nfor f in a.input_files:\n    json.load(open(f))\n"
)


def test_a_missing_json_input_of_a_programs_own_positional_is_data_made_at_set_up(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "data/nq/dev/state.json": "{}",
            "best_of_n_to_paired_gen.py": _POSITIONAL_PROGRAM,
            "train.py": argparse_program("--config"),
            "best_of_n_to_paired_gen.sh": "#!/bin/bash\n"
            "python best_of_n_to_paired_gen.py data/nq/dev_model-x_concise_gr_bestof32_quip.json --output_dir paired\n",
            # a config flag's missing JSON stays the checkout's mistake
            "train.sh": "#!/bin/bash\npython train.py --config data/nq/cfg.json\n",
        },
    )
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK601"]
    assert _pk(found, "PK601") == [("best_of_n_to_paired_gen.sh", 2, "info"), ("train.sh", 2, "warning")]
    data = next(f for f in found if f["severity"] == "info")
    assert "an input the program takes as a positional" in data["message"]
