"""Deterministic corpus of realistic training launch scripts for the packlint benchmarks.

Why generated and not collected: the numbers must be reproducible by anyone, offline, from this file
alone. Every script is built from a seeded `random.Random` (one per script, so growing the corpus
never changes the scripts already in it) out of the patterns real Megatron / LLaVA-OneVision launch
scripts use (see DOMAIN.md, last section): positional-argument and caller-env defaults, quoted and
unquoted packing exports (some commented out, some never exported), flag arrays appended in
branches, plain-string flag lists expanded unquoted, `case`/`for`/functions/`$(( ))`/here-docs,
`source` of shared config files, several launchers per script, and a few CRLF files.

Layout written by `generate(out_dir)`:

    out_dir/manifest.json            parameters + generator hash (run.py regenerates when stale)
    out_dir/clean.sh                 one ~250-line script with correct packing (cold-start input)
    out_dir/scripts/train_NNNN.sh    the throughput corpus (`packlint check out_dir/scripts/`)
    out_dir/scripts/configs/*.sh     shared config files the scripts `source`
    out_dir/scale/*.sh               scale cases, measured one by one (20,000 lines, 1,000 nested ifs, ...)

Run `python benchmarks/corpus.py --check [OUT_DIR]` to generate and verify with `bash -n` (CRLF files
are checked with their line endings normalised: bash itself rejects `then\\r`, which is the point of
having them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SEED = 20250501
DEFAULT_SIZE = 300
MIN_LINES, MAX_LINES = 50, 1500
CLEAN_LINES = 250
CRLF_EVERY = 25  # one script in 25 has Windows line endings

# name -> (kind, size): "long" = a flat script of about `size` lines, "nested" = `size` nested ifs,
# "sequential" = `size` independent undecidable ifs one after another (2**size paths if enumerated).
SCALE_CASES_FULL = {"long_5000": ("long", 5000), "long_20000": ("long", 20000),
                    "nested_ifs_250": ("nested", 250), "nested_ifs_1000": ("nested", 1000),
                    "sequential_ifs_200": ("sequential", 200),
                    "endless_loops_10": ("endless", 10), "monitor_120": ("monitor", 120),
                    "known_loops_3": ("known_loops", 3)}
SCALE_CASES_QUICK = {"long_2000": ("long", 2000), "long_8000": ("long", 8000),
                     "nested_ifs_100": ("nested", 100), "nested_ifs_400": ("nested", 400),
                     "sequential_ifs_50": ("sequential", 50),
                     "endless_loops_10": ("endless", 10), "monitor_120": ("monitor", 120),
                     "known_loops_3": ("known_loops", 3)}

CONFIG_FILES = ("common_env.sh", "cluster_a100.sh", "cluster_h800.sh", "data_paths.sh")

MODEL_SIZES = {  # name: (layers, hidden, ffn, heads, kv_groups)
    "1.5b": (28, 1536, 8960, 12, 2), "7b": (28, 3584, 18944, 28, 4),
    "8b": (36, 4096, 12288, 32, 8), "14b": (48, 5120, 13824, 40, 8),
    "32b": (64, 5120, 27648, 40, 8), "72b": (80, 8192, 29568, 64, 8),
}
DATASETS = ("llava_ov_mid_stage", "mammoth_vl_si", "sharegpt4v_pt", "allava_caption", "coyo_700m_sub",
            "docvqa_train", "chartqa_train", "textvqa_train", "ocrvqa", "laion_cn_sub", "mint_1t_pdf")
FLAG_POOL = (  # store-true Megatron flags used to pad flag lists
    "--use-flash-attn", "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather",
    "--no-masked-softmax-fusion", "--disable-bias-linear", "--untie-embeddings-and-output-weights",
    "--swiglu", "--bf16", "--use-rotary-position-embeddings", "--no-position-embedding",
    "--sequence-parallel", "--no-gradient-accumulation-fusion", "--use-mcore-models",
    "--recompute-activations", "--add-qkv-bias", "--no-load-optim", "--no-load-rng",
    "--distributed-timeout-minutes 60", "--log-interval 1", "--eval-interval 1000", "--eval-iters 10",
    "--save-interval 2000", "--clip-grad 1.0", "--weight-decay 0.1", "--adam-beta1 0.9",
    "--adam-beta2 0.95", "--init-method-std 0.006", "--attention-dropout 0.0", "--hidden-dropout 0.0",
    "--lr-warmup-fraction 0.002", "--lr-decay-style cosine", "--min-lr 1.0e-6", "--norm-epsilon 1e-6",
    "--tensorboard-queue-size 1", "--log-timers-to-tensorboard", "--log-validation-ppl-to-tensorboard",
    "--num-workers 8", "--dataloader-type external", "--split 100,0,0", "--seed 42",
)


@dataclass(frozen=True)
class Params:
    """What determines the corpus bytes; stored in manifest.json to detect a stale corpus."""
    seed: int = DEFAULT_SEED
    size: int = DEFAULT_SIZE
    quick: bool = False

    def manifest(self) -> dict:
        return {"seed": self.seed, "size": self.size, "quick": self.quick, "generator": generator_hash()}


def generator_hash() -> str:
    """Hash of this file: any change to the generator makes an existing corpus stale."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------------
# building blocks: each returns a list of lines (no newline characters)

def header(rng: random.Random, title: str) -> list[str]:
    shebang = rng.choice(["#!/bin/bash", "#!/usr/bin/env bash", "#!/bin/bash"])
    strict = rng.choice(["set -euxo pipefail", "set -euo pipefail", "set -ex", "set -e", "set -x"])
    return [shebang, f"# {title}", f"# generated benchmark script (seed {rng.randrange(10**6)})", "", strict, ""]


def positional_args(rng: random.Random) -> list[str]:
    names = [("TP", "1"), ("PP", "1"), ("CP", "1"), ("MBS", "1"), ("GBS", rng.choice(["128", "256", "512"])),
             ("SEQ_LEN", rng.choice(["4096", "8192", "16384", "32768"])),
             ("MODEL_SIZE", rng.choice(list(MODEL_SIZES)))]
    k = rng.randint(3, len(names))
    lines = [f'{n}="${{{i + 1}:-{d}}}"' for i, (n, d) in enumerate(names[:k])] + [""]
    if names[k:]:
        lines += [f'{n}="${{{n}:-{d}}}"' for n, d in names[k:]] + [""]
    return lines


def env_defaults(rng: random.Random, small: bool, single_node: bool = False) -> list[str]:
    lines = [
        'OUTPUT_DIR="${OUTPUT_DIR:-output}"',
        'NNODES="${NNODES:-1}"',
        'NODE_RANK="${NODE_RANK:-0}"',
        'MASTER_ADDR="${MASTER_ADDR:-localhost}"',
        f'MASTER_PORT="${{MASTER_PORT:-{rng.choice([23456, 29500, 6000, 8888])}}}"',
        'GPUS_PER_NODE="${GPUS_PER_NODE:-$(nvidia-smi -L | wc -l)}"',
        'TIMESTAMP="${TIMESTAMP:-$(date +%Y%m%d_%H%M%S)}"',
        f'MEGATRON_PATH="${{MEGATRON_PATH:-/workspace/{rng.choice(["Megatron-LM", "AIAK-Megatron"])}}}"',
        'AIAK_TRAINING_PATH="${AIAK_TRAINING_PATH:-/workspace/AIAK-Training-LLM}"',
    ]
    if small:
        drop = ("TIMESTAMP", "AIAK") + (("NNODES", "NODE_RANK", "MASTER") if single_node else ())
        lines = [line for line in lines if not line.startswith(drop)]
    elif rng.random() < 0.4:
        lines.append('TOKENIZER_PATH="${TOKENIZER_PATH:-$(dirname "$(readlink -f "$0")")/tokenizer}"')
    return lines + [""]


def source_configs(rng: random.Random) -> list[str]:
    lines = ['SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"']
    for name in rng.sample(CONFIG_FILES, rng.randint(1, 3)):
        verb = rng.choice(["source", "source", "."])
        lines.append(f'{verb} "${{SCRIPT_DIR}}/configs/{name}"')
    return lines + [""]


def packing_env(rng: random.Random, small: bool = False) -> list[str]:
    """The packing switches in every style seen in the wild, right and wrong on purpose."""
    q = lambda v: rng.choice([v, f"'{v}'", f'"{v}"'])  # noqa: E731
    style = rng.choice(["correct", "correct", "correct", "leak", "broken", "off", "unexported", "dead_vqa"])
    lines = ["# sequence packing switches (read by the task encoder)"]
    if style in ("correct", "dead_vqa"):
        lines += [f"export OFFLINE_PACKING_BMR={q('1')}", f"export OFFLINE_PACKED_DATA={q('1')}"]
    elif style == "leak":
        lines += [f"export OFFLINE_PACKING_BMR={q('1')}", f"# export OFFLINE_PACKED_DATA={q('1')}"]
    elif style == "broken":
        lines += [f"# export OFFLINE_PACKING_BMR={q('1')}", f"export OFFLINE_PACKED_DATA={q('1')}"]
    elif style == "off":
        lines += [f"export OFFLINE_PACKING_BMR={q('0')}", f"export OFFLINE_PACKED_DATA={q('0')}"]
    else:
        lines += [f"export OFFLINE_PACKING_BMR={q('1')}", f"OFFLINE_PACKED_DATA={q('1')}"]
    if style == "dead_vqa" or rng.random() < 0.3:
        lines.append(f"export OFFLINE_PACKING_VQA={q('1')}")
    if rng.random() < 0.5:
        lines.append("# export OFFLINE_PACKING_VQA=1")
    lines += ["export CUDA_DEVICE_MAX_CONNECTIONS=1"]
    if not small:
        lines += ["export NCCL_IB_TIMEOUT=22", f"export NCCL_DEBUG={rng.choice(['WARN', 'INFO'])}"]
    lines.append("")
    return lines


def functions(rng: random.Random) -> list[str]:
    return [
        "log() {",
        '    echo "[$(date \'+%F %T\')] $*"',
        "}",
        "",
        "require_path() {",
        '    local path="$1"',
        '    if [[ ! -e "$path" ]]; then',
        '        log "missing path: $path" >&2',
        "        return 1",
        "    fi",
        "}",
        "",
        "cleanup() {",
        f'    log "job finished with status $?, removing {rng.choice(["lock", "tmp"])} files"',
        '    rm -f "${OUTPUT_DIR}/.running"',
        "}",
        "trap cleanup EXIT",
        "",
    ]


def model_case(rng: random.Random) -> list[str]:
    lines = ['case "${MODEL_SIZE}" in']
    for name, (layers, hidden, ffn, heads, groups) in MODEL_SIZES.items():
        lines += [f"    {name})",
                  f"        NUM_LAYERS={layers}", f"        HIDDEN_SIZE={hidden}", f"        FFN_HIDDEN_SIZE={ffn}",
                  f"        NUM_ATTN_HEADS={heads}", f"        NUM_QUERY_GROUPS={groups}", "        ;;"]
    lines += ["    *)", '        echo "unsupported model size: ${MODEL_SIZE}" >&2', "        exit 1", "        ;;",
              "esac", ""]
    if rng.random() < 0.5:
        return lines
    return lines[:1] + lines[1 + 7 * 2:]  # fewer branches sometimes (keeps sizes varied)


def arithmetic() -> list[str]:
    return [
        "WORLD_SIZE=$((GPUS_PER_NODE * NNODES))",
        "DP_SIZE=$(( WORLD_SIZE / (TP * PP * ${CP:-1}) ))",
        "GRAD_ACC=$(( GBS / (MBS * DP_SIZE) ))",
        'echo "world=${WORLD_SIZE} dp=${DP_SIZE} grad_acc=${GRAD_ACC}"',
        "",
    ]


def distributed_args(rng: random.Random) -> list[str]:
    return [
        "DISTRIBUTED_ARGS=(",
        '    --nproc_per_node "${GPUS_PER_NODE}"',
        '    --nnodes "${NNODES}"',
        '    --node_rank "${NODE_RANK}"',
        '    --master_addr "${MASTER_ADDR}"',
        '    --master_port "${MASTER_PORT}"',
        ")",
        "",
    ] if rng.random() < 0.8 else [
        'DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK '
        '--master_addr $MASTER_ADDR --master_port $MASTER_PORT"',
        "",
    ]


def model_args(rng: random.Random, with_case: bool) -> list[str]:
    if with_case:
        vals = ['"${NUM_LAYERS}"', '"${HIDDEN_SIZE}"', '"${FFN_HIDDEN_SIZE}"', '"${NUM_ATTN_HEADS}"',
                '"${NUM_QUERY_GROUPS}"']
    else:
        vals = [str(v) for v in MODEL_SIZES[rng.choice(list(MODEL_SIZES))]]
    names = ["--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--num-query-groups"]
    lines = ["MODEL_ARGS=("] + [f"    {n} {v}" for n, v in zip(names, vals)]
    lines += ["    --group-query-attention", '    --max-position-embeddings "${SEQ_LEN}"',
              "    --position-embedding-type rope", "    --normalization RMSNorm", ")", ""]
    return lines


def training_args(rng: random.Random, n_extra: int, small: bool) -> list[str]:
    lines = [
        "TRAINING_ARGS=(",
        "    --training-phase sft",
        '    --seq-length "${SEQ_LEN}"',
        '    --micro-batch-size "${MBS}"',
        '    --global-batch-size "${GBS}"',
        f"    --lr {rng.choice(['1.0e-5', '2.0e-5', '5.0e-6', '1e-3'])}",
        f"    --train-iters {rng.choice([5000, 10000, 20000, 100000])}",
        '    --tensor-model-parallel-size "${TP}"',
        '    --pipeline-model-parallel-size "${PP}"',
    ]
    if small:  # no MODEL_ARGS array in small scripts: the model shape goes here
        layers, hidden, _, heads, _ = MODEL_SIZES[rng.choice(list(MODEL_SIZES))]
        lines.append(f"    --num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads}")
    if rng.random() < 0.6:
        lines.append(rng.choice(["    --packing-sft-data", "    --packing-pretrain-data"]))
    lines += [f"    {f}" for f in rng.sample(FLAG_POOL, min(n_extra, len(FLAG_POOL)))]
    lines += [")", ""]
    return lines


def branch_appends(rng: random.Random, k: int, has_log: bool) -> list[str]:
    """`ARGS+=(...)` in branches on values packlint cannot decide: each one doubles the paths."""
    out = []
    conds = [('"${PP}" -gt 1', '--num-layers-per-virtual-pipeline-stage 2'),
             ('"${CP}" -gt 1', '--context-parallel-size "${CP}"'),
             ('-n "${PP_LAYERS:-}"', '--custom-pipeline-layers "${PP_LAYERS}"'),
             ('"${RESUME:-0}" == 1', '--load "${OUTPUT_DIR}/checkpoints"'),
             ('-n "${WANDB_PROJECT:-}"', '--wandb-project "${WANDB_PROJECT}"'),
             ('"${USE_FP8:-0}" == 1', '--fp8-format hybrid'),
             ('"${ENABLE_PROFILE:-false}" == true', '--profile --profile-step-start 10'),
             ('"${TP}" -gt 1', '--sequence-parallel')]
    for cond, flag in rng.sample(conds, min(k, len(conds))):
        out += [f"if [[ {cond} ]]; then", f"    TRAINING_ARGS+=({flag})"]
        if rng.random() < 0.3:
            out += ["else", '    log "skipping optional setting"' if has_log and rng.random() < 0.5 else "    :"]
        out += ["fi"]
    return out + [""]


def data_args(rng: random.Random) -> list[str]:
    ds = rng.sample(DATASETS, rng.randint(1, 4))
    lines = [f'DATA_PATH="${{DATA_PATH:-/mnt/data/{ds[0]}/wds}}"']
    if rng.random() < 0.5:
        lines += ["DATA_ARGS=(", '    --data-path "${DATA_PATH}"']
        lines += [f"    /mnt/data/{d}/wds" for d in ds[1:]]
        lines += ['    --tokenizer-type HFTokenizer', '    --hf-tokenizer-path "${TOKENIZER_PATH:-/mnt/tokenizer}"',
                  ")", ""]
    else:
        lines += ['DATA_ARGS="--data-path ${DATA_PATH} --tokenizer-type HFTokenizer '
                  '--hf-tokenizer-path ${TOKENIZER_PATH:-/mnt/tokenizer}"', ""]
    return lines


def image_args(rng: random.Random) -> list[str]:
    if rng.random() < 0.5:
        return ["IMG_ARGS=()", 'if [[ "${USE_VIT:-1}" == 1 ]]; then',
                "    IMG_ARGS=(--img-h 448 --img-w 448 --patch-dim 14)", "fi", ""]
    return []


def plain_string_flags(rng: random.Random) -> list[str]:
    flags = " ".join(rng.sample(FLAG_POOL, rng.randint(3, 8)))
    return [f'GPT_ARGS="--micro-batch-size {rng.choice([1, 1, 2])} --global-batch-size ${{GBS}} {flags}"',
            'OUTPUT_ARGS="--save ${OUTPUT_DIR}/checkpoints --tensorboard-dir ${OUTPUT_DIR}/tensorboard"', ""]


def heredoc(rng: random.Random) -> list[str]:
    if rng.random() < 0.5:
        return ['mkdir -p "${OUTPUT_DIR}"', 'cat > "${OUTPUT_DIR}/run_config.yaml" <<EOF',
                "tp: ${TP}", "pp: ${PP}", "micro_batch_size: ${MBS}", "global_batch_size: ${GBS}",
                "seq_length: ${SEQ_LEN}", "started: $(date)", "EOF", ""]
    return ["cat <<'EOF' > ds_config.json", "{", '  "train_micro_batch_size_per_gpu": 1,',
            '  "gradient_accumulation_steps": 8,', '  "bf16": {"enabled": true},',
            '  "zero_optimization": {"stage": 2, "overlap_comm": true}', "}", "EOF", ""]


def launch(rng: random.Random, kind: str, dist: str, data_is_array: bool, has_img: bool,
           has_gpt: bool, small: bool) -> list[str]:
    """One launch command; `dist` is how the launcher's own options are spelled."""
    data = '"${DATA_ARGS[@]}"' if data_is_array else "${DATA_ARGS}"
    progs = ["pretrain_gpt.py", '"${MEGATRON_PATH}/pretrain_vlm.py"']
    prog = rng.choice(progs if small else progs + ['"${AIAK_TRAINING_PATH}/aiak_training_llm/train.py"'])
    tail = [] if small else ['    "${MODEL_ARGS[@]}" \\']
    tail += [f"    {data} \\", '    "${TRAINING_ARGS[@]}" \\']
    if has_img:
        tail.append("    ${IMG_ARGS:+${IMG_ARGS[@]}} \\")
    if has_gpt:
        tail.append("    $GPT_ARGS $OUTPUT_ARGS \\")
    tail.append('    2>&1 | tee "${OUTPUT_DIR}/train' + ('.log"' if small else '_${TIMESTAMP}.log"'))
    if kind == "torchrun":
        pypath = "${MEGATRON_PATH}" + ("" if small else ":${AIAK_TRAINING_PATH}")
        head = [f'PYTHONPATH="{pypath}:${{PYTHONPATH:-}}" torchrun {dist} \\',
                f"    {prog} \\"]
    elif kind == "python_m":
        head = [f"python -m torch.distributed.run {dist} \\", f"    {prog} \\"]
    elif kind == "deepspeed":
        head = ['deepspeed --num_gpus "${GPUS_PER_NODE}" --num_nodes "${NNODES}" \\', f"    {prog} \\",
                "    --deepspeed ds_config.json \\"]
    elif kind == "srun":
        head = ['srun --nodes="${NNODES}" --ntasks-per-node=8 --gpus-per-task=1 \\',
                f"    python {prog} \\"]
    elif kind == "accelerate":
        head = ['accelerate launch --num_processes "${WORLD_SIZE:-8}" \\', f"    {prog} \\"]
    else:  # mpirun
        head = ['mpirun -np "${WORLD_SIZE:-8}" --allow-run-as-root \\', f"    python {prog} \\"]
    return head + tail + [""]


# --------------------------------------------------------------------------------------------------
# padding: realistic filler sections used to reach a script's target size

def pad_comment_block(rng: random.Random) -> list[str]:
    words = ("packing", "sequence", "length", "checkpoint", "resume", "the", "cluster", "batch", "warmup",
             "tokens", "throughput", "node", "nccl", "timeout", "dataset", "mixture", "ratio", "stage")
    n = rng.randint(3, 12)
    return ["#" * 78] + ["# " + " ".join(rng.choice(words) for _ in range(rng.randint(5, 12)))
                         for _ in range(n)] + ["#" * 78, ""]


def pad_flag_list(rng: random.Random, idx: int) -> list[str]:
    name = f"EXTRA_ARGS_{idx}"
    flags = rng.sample(FLAG_POOL, rng.randint(5, 20))
    return [f"{name}=("] + [f"    {f}" for f in flags] + [")", f'TRAINING_ARGS+=("${{{name}[@]}}")', ""]


def pad_data_prep(rng: random.Random) -> list[str]:
    ds = rng.choice(DATASETS)
    return [f"# --- data preparation: {ds} ---",
            f'PREP_DIR="${{OUTPUT_DIR}}/prep/{ds}"',
            'mkdir -p "${PREP_DIR}"',
            f"for shard in $(seq 0 {rng.choice([7, 15, 31, 63])}); do",
            '    if [[ -f "${PREP_DIR}/shard_${shard}.done" ]]; then',
            "        continue",
            "    fi",
            f'    python tools/preprocess_data.py --input "/mnt/raw/{ds}/part-${{shard}}.jsonl" \\',
            '        --output-prefix "${PREP_DIR}/shard_${shard}" --workers 16 --append-eod',
            '    touch "${PREP_DIR}/shard_${shard}.done"',
            "done",
            ""]


def pad_checkpoint_loop(rng: random.Random) -> list[str]:
    steps = " ".join(str(s) for s in sorted(rng.sample(range(500, 50001, 500), rng.randint(3, 8))))
    return [f"for step in {steps}; do",
            '    CKPT="${OUTPUT_DIR}/checkpoints/iter_$(printf "%07d" "${step}")"',
            '    if [[ -d "${CKPT}" ]]; then',
            '        python tools/checkpoint/convert.py --load-dir "${CKPT}" \\',
            '            --save-dir "${OUTPUT_DIR}/hf/step_${step}" --target-tensor-parallel-size 1',
            "    else",
            '        echo "skip ${CKPT}"',
            "    fi",
            "done",
            ""]


def pad_env_dump(rng: random.Random) -> list[str]:
    names = rng.sample(["NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "GLOO_SOCKET_IFNAME",
                        "TORCH_NCCL_AVOID_RECORD_STREAMS", "NVTE_FWD_LAYERNORM_SM_MARGIN",
                        "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS", "TOKENIZERS_PARALLELISM"], 4)
    vals = ["eth0", "mlx5_0,mlx5_1", "3", "eth0", "1", "16", "expandable_segments:True", "8", "false"]
    lines = [f'export {n}="${{{n}:-{rng.choice(vals)}}}"' for n in names]
    return lines + ["env | grep -E '^(NCCL|CUDA|OFFLINE)_' | sort", ""]


def pad_mixture_case(rng: random.Random) -> list[str]:
    lines = ['case "${STAGE:-sft}" in']
    for stage in ("pretrain", "mid", "sft"):
        ds = rng.sample(DATASETS, 2)
        lines += [f"    {stage})", f'        MIX="{ds[0]}:0.{rng.randint(1, 9)},{ds[1]}:0.{rng.randint(1, 9)}"',
                  "        ;;"]
    return lines + ['    *) MIX="" ;;', "esac", 'echo "data mixture: ${MIX}"', ""]


PADDERS = (pad_comment_block, pad_data_prep, pad_checkpoint_loop, pad_env_dump, pad_mixture_case)


# --------------------------------------------------------------------------------------------------
# whole scripts

def training_script(rng: random.Random, target_lines: int, title: str) -> list[str]:
    """One realistic launch script of about `target_lines` lines (never fewer than its core).

    Small scripts (< 100 lines) are the terse kind: one array of flags, one launch. Big ones get
    functions, a model-size `case`, several launchers spread through the file and padding sections.
    """
    small, big = target_lines < 100, target_lines >= 150
    single_node = small and rng.random() < 0.6  # `torchrun --nproc_per_node N train.py`, no rendezvous
    lines = header(rng, title) + positional_args(rng) + env_defaults(rng, small, single_node)
    if big or rng.random() < 0.3:
        lines += source_configs(rng)
    lines += packing_env(rng, small)
    if big:
        lines += functions(rng)
    use_case = big and rng.random() < 0.7
    if use_case:
        lines += model_case(rng)
    if big or (not small and rng.random() < 0.3):
        lines += arithmetic()
    dist = [] if single_node else distributed_args(rng)
    lines += dist
    dist_words = ('--nproc_per_node "${GPUS_PER_NODE}"' if single_node else
                  '"${DISTRIBUTED_ARGS[@]}"' if dist[0].endswith("(") else "$DISTRIBUTED_ARGS")
    if not small:
        lines += model_args(rng, use_case)
    lines += training_args(rng, rng.randint(0, 12 if big else 3), small)
    lines += branch_appends(rng, rng.randint(1, 8 if big else 2), has_log=big)
    data = data_args(rng)
    lines += data
    img = [] if small else image_args(rng)
    lines += img
    has_gpt = rng.random() < 0.3
    if has_gpt:
        lines += plain_string_flags(rng)
    if big or (not small and rng.random() < 0.3):
        lines += heredoc(rng)
    kinds = ["torchrun"] + (rng.sample(["python_m", "deepspeed", "srun", "accelerate", "mpirun", "torchrun"],
                                       rng.randint(0, 3)) if big else [])
    launch_blocks = [launch(rng, k, dist_words, data[1].startswith("DATA_ARGS=("), bool(img),
                            has_gpt, small) for k in kinds]
    tail_len = sum(len(b) for b in launch_blocks) + 1
    i = 0
    while len(lines) + tail_len < target_lines:
        block = pad_flag_list(rng, i) if rng.random() < 0.2 else rng.choice(PADDERS)(rng)
        i += 1
        if big and rng.random() < 0.3 and launch_blocks[1:]:
            lines += launch_blocks.pop(1)  # spread launches through the script, not all at the end
        lines += block
    for block in launch_blocks:
        lines += block
    lines.append('echo "done: ${OUTPUT_DIR}"')
    return lines


def clean_script(rng: random.Random) -> list[str]:
    """~250 lines, packing set correctly (BMR=1, PACKED_DATA=1, MBS=1, exported), ShellCheck-clean."""
    lines = [
        "#!/bin/bash",
        "# LLaVA-OneVision2 SFT with offline packed data (the clean cold-start benchmark input).",
        "set -euo pipefail",
        "",
        'TP="${1:-2}"', 'PP="${2:-1}"', 'MBS="${3:-1}"', 'GBS="${4:-256}"', 'SEQ_LEN="${5:-8192}"',
        "",
        'OUTPUT_DIR="${OUTPUT_DIR:-output}"', 'NNODES="${NNODES:-1}"', 'NODE_RANK="${NODE_RANK:-0}"',
        'MASTER_ADDR="${MASTER_ADDR:-localhost}"', 'MASTER_PORT="${MASTER_PORT:-29500}"',
        'GPUS_PER_NODE="${GPUS_PER_NODE:-8}"',
        'AIAK_TRAINING_PATH="${AIAK_TRAINING_PATH:-/workspace/AIAK-Training-LLM}"',
        'MEGATRON_PATH="${MEGATRON_PATH:-/workspace/AIAK-Megatron}"',
        "",
        'SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        "# shellcheck source=/dev/null",
        'source "${SCRIPT_DIR}/scripts/configs/common_env.sh"',
        "",
        "# sequence packing: both gates on, micro-batch size 1",
        "export OFFLINE_PACKING_BMR=1",
        "export OFFLINE_PACKED_DATA=1",
        "export CUDA_DEVICE_MAX_CONNECTIONS=1",
        "",
        "log() {",
        '    echo "[$(date \'+%F %T\')] $*"',
        "}",
        "",
        "WORLD_SIZE=$((GPUS_PER_NODE * NNODES))",
        "DP_SIZE=$(( WORLD_SIZE / (TP * PP) ))",
        'log "world=${WORLD_SIZE} dp=${DP_SIZE}"',
        "",
        "DISTRIBUTED_ARGS=(",
        '    --nproc_per_node "${GPUS_PER_NODE}"', '    --nnodes "${NNODES}"', '    --node_rank "${NODE_RANK}"',
        '    --master_addr "${MASTER_ADDR}"', '    --master_port "${MASTER_PORT}"',
        ")",
        "",
        "MODEL_ARGS=(",
        "    --num-layers 28", "    --hidden-size 3584", "    --ffn-hidden-size 18944",
        "    --num-attention-heads 28", "    --group-query-attention", "    --num-query-groups 4",
        '    --max-position-embeddings "${SEQ_LEN}"', "    --position-embedding-type rope",
        "    --normalization RMSNorm", "    --swiglu", "    --disable-bias-linear",
        ")",
        "",
        "TRAINING_ARGS=(",
        "    --training-phase sft", '    --seq-length "${SEQ_LEN}"', '    --micro-batch-size "${MBS}"',
        '    --global-batch-size "${GBS}"', "    --lr 1.0e-5", "    --min-lr 1.0e-6", "    --train-iters 10000",
        '    --tensor-model-parallel-size "${TP}"', '    --pipeline-model-parallel-size "${PP}"',
        "    --bf16", "    --use-flash-attn", "    --use-distributed-optimizer",
        ")",
        "",
        'if [[ "${TP}" -gt 1 ]]; then',
        "    TRAINING_ARGS+=(--sequence-parallel)",
        "fi",
        "",
        'DATA_PATH="${DATA_PATH:-/mnt/data/llava_ov_mid_stage/packed_wds}"',
        "DATA_ARGS=(",
        '    --data-path "${DATA_PATH}"', "    --tokenizer-type HFTokenizer",
        '    --hf-tokenizer-path "${TOKENIZER_PATH:-/mnt/tokenizer}"', "    --dataloader-type external",
        ")",
        "",
        'mkdir -p "${OUTPUT_DIR}"',
    ]
    i = 0
    body: list[str] = []
    while len(lines) + len(body) < CLEAN_LINES - 12:
        pad = [pad_comment_block, pad_checkpoint_loop, pad_data_prep][i % 3]
        body += pad(rng)
        i += 1
    lines += body
    lines += [
        'LOG_FILE="${OUTPUT_DIR}/train_$(date +%Y%m%d_%H%M%S).log"',
        'PYTHONPATH="${MEGATRON_PATH}:${AIAK_TRAINING_PATH}:${PYTHONPATH:-}" torchrun "${DISTRIBUTED_ARGS[@]}" \\',
        '    "${AIAK_TRAINING_PATH}/aiak_training_llm/train.py" \\',
        '    "${MODEL_ARGS[@]}" \\',
        '    "${DATA_ARGS[@]}" \\',
        '    "${TRAINING_ARGS[@]}" \\',
        '    --save "${OUTPUT_DIR}/checkpoints" \\',
        '    2>&1 | tee "${LOG_FILE}"',
        "",
        'log "done: ${OUTPUT_DIR}"',
    ]
    return lines


def config_file(rng: random.Random, name: str) -> list[str]:
    """A shared config: the kind of file several launch scripts `source`."""
    lines = ["#!/bin/bash", f"# shared settings: {name} (sourced by the launch scripts, not run)", ""]
    if name == "common_env.sh":
        lines += ['export NCCL_IB_TIMEOUT="${NCCL_IB_TIMEOUT:-22}"', "export CUDA_DEVICE_MAX_CONNECTIONS=1",
                  'export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"', 'TOKENIZER_PATH="/mnt/tokenizer"',
                  'export WANDB_MODE="${WANDB_MODE:-offline}"']
    elif name == "data_paths.sh":
        lines += ["DATA_ROOT=/mnt/data"] + [f'{d.upper()}_PATH="${{DATA_ROOT}}/{d}/wds"' for d in DATASETS]
    else:
        lines += [f'GPUS_PER_NODE="${{GPUS_PER_NODE:-{8}}}"', 'export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-eth0}"',
                  f'export NCCL_IB_HCA="mlx5_{rng.randint(0, 3)},mlx5_{rng.randint(4, 7)}"',
                  "export NCCL_IB_GID_INDEX=3"]
    return lines + [""]


MONITOR_SCRIPT = """\
LOG_DIR=${LOG_DIR:-/tmp/logs}
N=${N_GPUS:-$(nvidia-smi -L | wc -l)}
INTERVAL=${INTERVAL:-30}
declare -A LAST
count=0
while true; do
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader | while read -r idx util mem; do
    util=${util%%%*}
    if [ "$util" -lt 5 ]; then
      echo "gpu $idx idle ($util%)" >> "$LOG_DIR/idle.log"
    fi
    for j in 1 2 3; do
      case $idx in
        0) A=$((A + j)) ;;
        *) B=$((B + j)) ;;
      esac
    done
  done
  for i in $(seq 0 $((N - 1))); do
    f=$LOG_DIR/rank_$i.log
    if [ -f "$f" ]; then
      last=$(tail -n 1 "$f")
      if [[ "$last" == *"iteration"* ]]; then
        LAST[$i]=$(echo "$last" | awk '{print $2}')
      fi
    fi
    for k in $(seq 1 "$i"); do
      s=$((s + k))
    done
  done
  pgrep -f pretrain_gpt.py > /dev/null || {
    count=$((count + 1))
    export NCCL_DEBUG=INFO
    torchrun --nproc_per_node "$N" pretrain_gpt.py "${ARGS[@]}" --restart "$count" &
  }
  while read -r line; do
    case "$line" in
      *ERROR*) echo "$line" >> "$LOG_DIR/errors.log" ;;
      *WARN*) w=$((w + 1)) ;;
    esac
  done < <(tail -n 100 "$LOG_DIR/train.log")
  if [ "$count" -gt 10 ]; then
    break
  fi
  sleep "$INTERVAL"
done""".split("\n")


def scale_script(kind: str, n: int) -> list[str]:
    """Adversarial but valid scripts: packlint's cost must stay linear in their size."""
    lines = ["#!/bin/bash", f"# scale case: {kind} {n}", "set -euo pipefail", "", 'MBS="${1:-1}"',
             "export OFFLINE_PACKING_BMR=1", "export OFFLINE_PACKED_DATA=1", "ARGS=(--micro-batch-size \"${MBS}\")", ""]
    if kind == "nested":
        lines += [f'if [[ "${{LEVEL_{i}:-0}}" == 1 ]]; then' for i in range(n)]
        lines += ["ARGS+=(--deep)"] + ["fi"] * n
    elif kind == "sequential":
        for i in range(n):
            lines += [f'if [[ "${{OPT_{i}:-0}}" == 1 ]]; then', f"    ARGS+=(--opt-{i} {i})", "fi"]
    elif kind == "endless":  # `while true` nested n deep (issue 11: 19 s of CPU for 10 lines, once)
        lines += ["while true; do"] * n + ["  step=$((step + 1))", "  sleep 1"] + ["done"] * n
    elif kind == "known_loops":  # n nested loops over 40 known items: ends on the work budget
        items = " ".join(str(i) for i in range(40))
        lines += [f'ITEMS="{items}"'] + [f"for i{k} in $ITEMS; do" for k in range(n)]
        lines += ['  : "$i0"'] + ["done"] * n
    elif kind == "monitor":  # a monitoring / restart script in the shape of real ones (15-30 s, once)
        lines += MONITOR_SCRIPT
        while len(lines) < n - 3:
            lines += ["# padding: more polling helpers", 'log() { echo "[$(date +%T)] $*" >> "$LOG_DIR/monitor.log"; }']
    else:  # long: a 20,000-line script is realistic content repeated, with a launch every ~1,000 lines
        rng = random.Random(n)
        i = 0
        while len(lines) < n - 3:
            if i % 60 == 59:
                lines += ['torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" --seed ' + str(i), ""]
            block = pad_flag_list(rng, i) if i % 5 == 0 else rng.choice(PADDERS)(rng)
            lines += [line.replace("TRAINING_ARGS", "ARGS") for line in block]
            i += 1
    lines += ['torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}"', ""]
    return lines


# --------------------------------------------------------------------------------------------------

def _sizes(rng: random.Random, n: int) -> list[int]:
    """Log-uniform between MIN_LINES and MAX_LINES: many small scripts, a long tail of big ones."""
    import math
    lo, hi = math.log(MIN_LINES), math.log(MAX_LINES)
    return [int(math.exp(rng.uniform(lo, hi))) for _ in range(n)]


def _write(path: Path, lines: list[str], crlf: bool = False) -> None:
    text = "\n".join(lines).rstrip("\n") + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())


def generate(out_dir: Path, params: Params = Params()) -> dict:
    """Write the corpus under `out_dir` (replacing what is there) and return its manifest."""
    out_dir = Path(out_dir)
    for old in (out_dir / "scripts", out_dir / "scale", out_dir / "clean.sh", out_dir / "manifest.json"):
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()  # (the collected public scripts in out_dir/public stay)
    scripts = out_dir / "scripts"
    sizes = _sizes(random.Random(params.seed), params.size)
    for i, target in enumerate(sizes):
        rng = random.Random(params.seed * 1_000_003 + i)
        _write(scripts / f"train_{i:04d}.sh", training_script(rng, target, f"launch script {i}"),
               crlf=(i % CRLF_EVERY == CRLF_EVERY - 1))
    for name in CONFIG_FILES:
        _write(scripts / "configs" / name, config_file(random.Random(f"{params.seed}:{name}"), name))
    _write(out_dir / "clean.sh", clean_script(random.Random(params.seed - 1)))
    cases = SCALE_CASES_QUICK if params.quick else SCALE_CASES_FULL
    for name, (kind, n) in cases.items():
        _write(out_dir / "scale" / f"{name}.sh", scale_script(kind, n))
    manifest = params.manifest()
    files = sorted(p for p in out_dir.rglob("*.sh"))
    manifest["files"] = len(files)
    manifest["lines"] = {str(p.relative_to(out_dir)): p.read_bytes().count(b"\n") for p in files}
    manifest["scale_cases"] = {name: {"kind": kind, "n": n} for name, (kind, n) in cases.items()}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def is_fresh(out_dir: Path, params: Params) -> bool:
    """True when `out_dir` holds exactly the corpus `params` would generate (by manifest)."""
    try:
        manifest = json.loads((Path(out_dir) / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return all(manifest.get(k) == v for k, v in params.manifest().items())


def bash_syntax_errors(out_dir: Path) -> list[str]:
    """`bash -n` every generated file; CRLF files are checked with LF endings (see module doc)."""
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(Path(out_dir).rglob("*.sh")):
            data = path.read_bytes()
            target = path
            if b"\r\n" in data:
                target = Path(tmp) / path.name
                target.write_bytes(data.replace(b"\r\n", b"\n"))
            proc = subprocess.run(["bash", "-n", str(target)], capture_output=True, text=True)
            if proc.returncode != 0:
                errors.append(f"{path}: {proc.stderr.strip()}")
    return errors


# Public repositories' shell scripts (real launch, monitoring, utility and Slurm job scripts), taken from
# the read-only snapshots under /work/.mirror (bare git dirs). Collected, never committed: the corpus
# folder is git-ignored, and the numbers are reproducible from the snapshot commits in its manifest.
MIRRORS = Path("/work/.mirror")
PUBLIC_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".job")


def collect_public(out_dir: Path, mirrors: Path = MIRRORS) -> dict:
    """Copy every shell script of every mirrored repository's HEAD to `out_dir/<owner+name>/<path>`."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    manifest: dict = {"kind": "public", "repositories": {}, "lines": {}}
    for git_dir in sorted(mirrors.glob("*/repo")):
        repo = git_dir.parent.name
        def git(*a: str) -> bytes:
            return subprocess.run(["git", "--git-dir", str(git_dir), *a], capture_output=True,
                                  check=True).stdout
        try:
            commit = git("rev-parse", "HEAD").decode().strip()
            names = git("ls-tree", "-r", "-z", "--name-only", "HEAD").split(b"\0")
        except (subprocess.CalledProcessError, OSError):
            continue
        picked = [n.decode("utf-8", "surrogateescape") for n in names
                  if n and n.decode("utf-8", "surrogateescape").endswith(PUBLIC_SUFFIXES)]
        for name in picked:
            try:
                data = git("show", f"HEAD:{name}")
            except subprocess.CalledProcessError:
                continue
            if len(data) > 2_000_000 or data.startswith(b"version https://git-lfs"):
                continue
            dest = out_dir / repo / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            manifest["lines"][f"{repo}/{name}"] = data.count(b"\n")
        manifest["repositories"][repo] = {"commit": commit, "files": len(picked)}
    manifest["files"] = len(manifest["lines"])
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["collect"]:
        ap = argparse.ArgumentParser(prog="corpus.py collect", description=collect_public.__doc__)
        ap.add_argument("out_dir", nargs="?", default=str(Path(__file__).parent / "corpus" / "public"))
        ap.add_argument("--mirrors", default=str(MIRRORS))
        a = ap.parse_args(argv[1:])
        m = collect_public(Path(a.out_dir), Path(a.mirrors))
        print(f"collected {m['files']} files, {sum(m['lines'].values())} lines, from "
              f"{len(m['repositories'])} repositories to {a.out_dir}")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=str(Path(__file__).parent / "corpus"))
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--size", type=int, default=DEFAULT_SIZE, help="number of launch scripts")
    ap.add_argument("--quick", action="store_true", help="smaller scale cases")
    ap.add_argument("--check", action="store_true", help="verify every file with `bash -n`")
    args = ap.parse_args(argv)
    manifest = generate(Path(args.out_dir), Params(args.seed, args.size, args.quick))
    total = sum(manifest["lines"].values())
    print(f"wrote {manifest['files']} files, {total} lines, to {args.out_dir}")
    if args.check:
        errors = bash_syntax_errors(Path(args.out_dir))
        for e in errors:
            print(e, file=sys.stderr)
        print(f"bash -n: {'OK' if not errors else f'{len(errors)} files FAILED'}")
        return 1 if errors else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
