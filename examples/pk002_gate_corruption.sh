#!/bin/bash
# Stage-2 SFT on offline-packed data, with Gate 1 left at its pretraining value.
set -euo pipefail

TP="${1:-2}"
PP="${2:-1}"
MBS="${3:-1}"
GBS="${4:-256}"
OUTPUT_DIR="${OUTPUT_DIR:-output/stage2}"

# Packing: Gate 1 (encode) and Gate 2 (batch) must both be on.
export OFFLINE_PACKING_BMR=0
export OFFLINE_PACKED_DATA='1'
export CUDA_DEVICE_MAX_CONNECTIONS=1

DISTRIBUTED_ARGS=(
    --nproc_per_node 8
    --nnodes "${NNODES:-1}"
    --node_rank "${NODE_RANK:-0}"
    --master_addr "${MASTER_ADDR:-localhost}"
    --master_port "${MASTER_PORT:-6000}"
)

TRAINING_ARGS=(
    --tensor-model-parallel-size "${TP}"
    --pipeline-model-parallel-size "${PP}"
    --micro-batch-size "${MBS}"
    --global-batch-size "${GBS}"
    --seq-length 16384
    --lr 1e-5
    --bf16
)

mkdir -p "${OUTPUT_DIR}"
PYTHONPATH=.:${PYTHONPATH:-} torchrun "${DISTRIBUTED_ARGS[@]}" \
    aiak_training_llm/train/pretrain/pretrain_llava_onevision2.py \
    "${TRAINING_ARGS[@]}" \
    --save "${OUTPUT_DIR}/checkpoints" --save-interval 1000 2>&1 | tee "${OUTPUT_DIR}/train.log"
