"""Issue 20's speed criterion: what reading the config files a launch names costs.

    python benchmarks/config_bench.py                   # 15 cold runs each, 64 files x 5 warm runs each
    python benchmarks/config_bench.py --runs 31 --files 128 --warm-runs 7
    python benchmarks/run.py ...                        # runs it too (unless --no-config-bench)

Two versions of one realistic LLaMA-Factory launch script (`llamafactory-cli train` of a full SFT with
DeepSpeed ZeRO-3, the shape of LLaMA-Factory's `examples/train_full/*.yaml` and
`examples/deepspeed/ds_z3_config.json`): **with** the YAML and the DeepSpeed JSON named (the YAML names
the JSON as well, and the command line overrides `deepspeed=`), and **without**: the same script with
the two file names removed (the `key=value` overrides stay). Both are checked by whole processes, as a
user runs packlint:

- cold: `packlint check run.sh`, one process per check, the two versions alternating (median of N);
- warm: `packlint check DIR` of F copies of the script (each in its own directory with its own config
  files), one process (`PACKLINT_JOBS=1`), alternating (median of M).

Criterion (issue 20): a script that names no config file is no slower (nothing of the config reader is
imported for it: checked here, by asking a child whether a YAML library was loaded), and one that names
config files costs at most 1.3x. A measurement, not a test: a miss prints MISS and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_RATIO = 1.3

SCRIPT = """\
#!/bin/bash
# Full-parameter SFT of Qwen2.5-7B-Instruct with LLaMA-Factory, DeepSpeed ZeRO-3, one node of 8 GPUs
# (multi-node: NNODES, NODE_RANK, MASTER_ADDR from the scheduler).
set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-0}
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export WANDB_PROJECT=${WANDB_PROJECT:-qwen25-sft}
export FORCE_TORCHRUN=1
export NNODES=${NNODES:-1}
export NODE_RANK=${NODE_RANK:-0}
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
export MASTER_PORT=${MASTER_PORT:-29500}

RUN_NAME=qwen25_7b_full_sft_${RUN_TAG:-baseline}
OUTPUT_DIR=${OUTPUT_DIR:-saves/qwen2.5-7b/full/sft}/${RUN_NAME}
mkdir -p "${OUTPUT_DIR}"

if [ "${NNODES}" -gt 1 ]; then
    echo "multi-node run: ${NNODES} nodes, this is node ${NODE_RANK}"
fi

llamafactory-cli train {config}\\
    {deepspeed}output_dir="${OUTPUT_DIR}" \\
    run_name="${RUN_NAME}" \\
    per_device_train_batch_size=1 \\
    gradient_accumulation_steps=8 \\
    2>&1 | tee "${OUTPUT_DIR}/train.log"
"""
CONFIG_ARG = "examples/train_full/qwen2_5_full_sft.yaml "
DEEPSPEED_ARG = "deepspeed=examples/deepspeed/ds_z3_config.json \\\n    "

YAML = """\
### model
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
trust_remote_code: true

### method
stage: sft
do_train: true
finetuning_type: full
deepspeed: examples/deepspeed/ds_z3_config.json  # choices: [ds_z0_config.json, ds_z2_config.json, ds_z3_config.json]

### dataset
dataset: identity,alpaca_en_demo
template: qwen
cutoff_len: 4096
max_samples: 100000
overwrite_cache: true
preprocessing_num_workers: 16
dataloader_num_workers: 4
packing: true
neat_packing: true

### output
output_dir: saves/qwen2.5-7b/full/sft
logging_steps: 10
save_steps: 500
plot_loss: true
overwrite_output_dir: true
save_only_model: false
report_to: wandb  # choices: [none, wandb, tensorboard, swanlab, mlflow]

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 1.0e-5
num_train_epochs: 3.0
lr_scheduler_type: cosine
warmup_ratio: 0.1
bf16: true
ddp_timeout: 180000000
resume_from_checkpoint: null
flash_attn: fa2

### eval
# eval_dataset: alpaca_en_demo
# val_size: 0.1
# per_device_eval_batch_size: 1
# eval_strategy: steps
# eval_steps: 500
"""

DEEPSPEED = {
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "zero_allow_untested_optimizer": True,
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "bf16": {"enabled": "auto"},
    "zero_optimization": {
        "stage": 3, "overlap_comm": False, "contiguous_gradients": True, "sub_group_size": 1e9,
        "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
        "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
        "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": True,
    },
}


def write_case(d: Path, with_config: bool) -> Path:
    """One launch directory: run.sh, and (with_config) the YAML and the DeepSpeed JSON beside it."""
    d.mkdir(parents=True, exist_ok=True)
    script = SCRIPT.replace("{config}", CONFIG_ARG if with_config else "")
    script = script.replace("{deepspeed}", DEEPSPEED_ARG if with_config else "")
    (d / "run.sh").write_text(script)
    if with_config:
        (d / "examples" / "train_full").mkdir(parents=True, exist_ok=True)
        (d / "examples" / "deepspeed").mkdir(parents=True, exist_ok=True)
        (d / "examples" / "train_full" / "qwen2_5_full_sft.yaml").write_text(YAML)
        (d / "examples" / "deepspeed" / "ds_z3_config.json").write_text(json.dumps(DEEPSPEED, indent=2) + "\n")
    return d / "run.sh"


# Asked of a child: what the config block of the launch holds, and whether the YAML reader was imported.
PROBE = """\
import json, sys
from packlint.cli import main
import io, contextlib
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    main(["inspect", "--format", "json", sys.argv[1]])
launch = json.loads(buf.getvalue())["launches"][0]
cfg = launch.get("config") or {}
files = [f.get("path") for f in cfg.get("files", []) if not f.get("missing") and not f.get("error")]
main(["check", "-q", sys.argv[1]])
loaded = "ruamel.yaml" in sys.modules or "yaml" in sys.modules
print(json.dumps({"stack": cfg.get("stack"), "files": files, "yaml": loaded}))
"""


def probe(script: Path, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(script)], capture_output=True, text=True, env=env,
                          cwd=script.parent)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": (proc.stderr or proc.stdout)[-500:]}


def measure(runs: int = 15, files: int = 64, warm_runs: int = 5, progress: bool = True) -> dict:
    """The numbers (seconds) and ratios; see the module doc."""
    sys.path.insert(0, str(HERE))
    import run as harness  # benchmarks/run.py: the same child timing (spawn to reap) and environment

    exe = harness.packlint_executable()
    env = dict(harness.CHILD_ENV)
    with tempfile.TemporaryDirectory(prefix="packlint-config-bench-") as tmp:
        root = Path(tmp)
        one = {name: write_case(root / "one" / name, name == "with") for name in ("with", "without")}
        warm_dirs = {}
        for name in ("with", "without"):
            warm_dirs[name] = root / "warm" / name
            for i in range(files):
                write_case(warm_dirs[name] / f"run_{i:03d}", name == "with")
        checks = {name: probe(path, env) for name, path in one.items()}

        def series(argvs: dict[str, list[str]], n: int, extra_env: dict | None = None, label: str = "") -> dict:
            out: dict[str, list] = {k: [] for k in argvs}
            saved = dict(harness.CHILD_ENV)
            harness.CHILD_ENV.update(extra_env or {})
            try:
                for i in range(n + 1):  # the first round warms the caches (rule table, bytecode)
                    for k, argv in argvs.items():
                        r = harness.run_child(argv)
                        if i:
                            out[k].append(r)
                    if progress:
                        print(f"  config {label} {i}/{n}", file=sys.stderr, flush=True)
            finally:
                harness.CHILD_ENV.clear()
                harness.CHILD_ENV.update(saved)
            return out

        cold = series({k: exe + ["check", "-q", str(p)] for k, p in one.items()}, runs, label="cold")
        warm = series({k: exe + ["check", "-q", str(d)] for k, d in warm_dirs.items()}, warm_runs,
                      {"PACKLINT_JOBS": "1"}, label="warm")

    def summary(rs: list) -> dict:
        return {"median_s": statistics.median(r.wall_s for r in rs), "min_s": min(r.wall_s for r in rs),
                "cpu_median_s": statistics.median(r.user_s + r.sys_s for r in rs),
                "returncodes": sorted({r.returncode for r in rs}, key=str), "argv": rs[-1].argv}

    result: dict = {"checks": checks, "files": files, "runs": runs, "warm_runs": warm_runs}
    for label, data in (("cold", cold), ("warm", warm)):
        s = {k: summary(v) for k, v in data.items()}
        ratio = s["with"]["median_s"] / s["without"]["median_s"]
        result[label] = s | {"ratio": ratio, "result": "PASS" if ratio <= TARGET_RATIO else "MISS"}
    return result


def report_rows(result: dict) -> list[tuple[str, str, str, str, str]]:
    """(measurement, with config files, without, ratio, result) rows."""
    def ms(x: float) -> str:
        return f"{x * 1e3:.0f} ms" if x < 10 else f"{x:.2f} s"

    rows = []
    c, w = result["cold"], result["warm"]
    rows.append((f"config files, cold: `check run.sh` (median of {result['runs']})", ms(c["with"]["median_s"]),
                 ms(c["without"]["median_s"]), f"{c['ratio']:.2f}x", f"<= {TARGET_RATIO}x: {c['result']}"))
    rows.append((f"config files, warm: {result['files']} scripts in one process (median of {result['warm_runs']})",
                 ms(w["with"]["median_s"]), ms(w["without"]["median_s"]), f"{w['ratio']:.2f}x",
                 f"<= {TARGET_RATIO}x: {w['result']}"))
    return rows


def sanity_notes(result: dict) -> list[str]:
    """What the two versions must be for the numbers to mean anything."""
    notes = []
    w, wo = result["checks"].get("with", {}), result["checks"].get("without", {})
    if len(w.get("files") or []) < 2:
        notes.append(f"WARNING: the version with config files did not read both files: {w}")
    if wo.get("files"):
        notes.append(f"WARNING: the version without config files read some: {wo}")
    if wo.get("yaml") is not False:
        notes.append(f"WARNING: a script that names no config file imported a YAML library (or the probe failed): {wo}")
    return notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="cold runs per version (default 15)")
    ap.add_argument("--files", type=int, default=64, help="scripts per warm run (default 64)")
    ap.add_argument("--warm-runs", type=int, default=5, help="warm runs per version (default 5)")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "config_bench.json")
    args = ap.parse_args(argv)
    result = measure(args.runs, args.files, args.warm_runs)
    print(f"load average before/after: {os.getloadavg()[0]:.2f}")
    for note in sanity_notes(result):
        print(note)
    print(f"with: {result['checks']['with']}\nwithout: {result['checks']['without']}\n")
    rows = [("measurement", "with config files", "without", "ratio", "target")] + report_rows(result)
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for i, row in enumerate(rows):
        print("| " + " | ".join(v.ljust(wd) for v, wd in zip(row, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
