#!/bin/bash
# Pretraining without packing; the sequence length is set in two places.
set -euo pipefail

MODEL_ARGS=(--num-layers 28 --hidden-size 3584 --seq-length 4096 --max-position-embeddings 32768)
TRAINING_ARGS=(--micro-batch-size 4 --global-batch-size 512 --seq-length 8192)

torchrun --nproc_per_node 8 pretrain_gpt.py "${MODEL_ARGS[@]}" "${TRAINING_ARGS[@]}"
