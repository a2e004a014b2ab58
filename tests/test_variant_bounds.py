"""Undecidable loops do not multiply the analysis: a loop whose iteration count is unknown is joined
again right after it, so N data-preparation loops give one variant, not 2**N (counted, not timed)."""

from __future__ import annotations

from packlint.api import inspect_script

DATA_LOOP = """
for shard in $(seq 0 {n}); do
    if [[ -f "prep/shard_${{shard}}.done" ]]; then
        continue
    fi
    python tools/preprocess_data.py --input part-${{shard}}.jsonl
done
"""


def test_unknown_loops_do_not_multiply_variants(tmp_path):
    script = "export OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
    script += "".join(DATA_LOOP.format(n=i) for i in range(12))
    script += "torchrun --nproc_per_node 8 train.py --micro-batch-size 1\n"
    path = tmp_path / "train.sh"
    path.write_text(script)
    model = inspect_script(str(path))
    train = [launch for launch in model["launches"] if launch["program"] == "train.py"]
    assert len(train) == 1
    assert len(train[0]["variants"]) == 1
    assert train[0]["env"]["OFFLINE_PACKED_DATA"]["value"] == "1"
    # the loop variable is unknown after the loop: it depends on how often the loop ran
    assert "depends on how many times the loop" in train[0]["unexported"]["shard"]["unknown"]


def test_branches_that_set_gates_still_fork(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(
        'for f in $(ls data); do echo "$f"; done\n'
        'if [[ "$(hostname)" == gpu* ]]; then export OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1;\n'
        'else export OFFLINE_PACKING_BMR=0 OFFLINE_PACKED_DATA=0; fi\n'
        "torchrun train.py --micro-batch-size 1\n")
    (launch,) = inspect_script(str(path))["launches"]
    values = sorted((v["env"]["OFFLINE_PACKING_BMR"]["value"], v["env"]["OFFLINE_PACKED_DATA"]["value"])
                    for v in launch["variants"])
    assert values == [("0", "0"), ("1", "1")]  # correlated, never mixed
