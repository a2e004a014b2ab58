#!/bin/bash
# SFT with online packing; the offline gate was appended at the end of the script.
set -euo pipefail

export OFFLINE_PACKING_BMR=1

torchrun --nproc_per_node 8 aiak_training_llm/train/sft/sft_llava_onevision2.py \
    --packing-sft-data \
    --micro-batch-size 1 \
    --global-batch-size 128

# packing for offline data
export OFFLINE_PACKED_DATA=1
