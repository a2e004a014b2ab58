#!/bin/bash
# SFT with online packing (--packing-sft-data); the offline gate is set but never exported.
set -euo pipefail

MBS=1
export OFFLINE_PACKING_BMR=1
OFFLINE_PACKED_DATA=1

torchrun --nproc_per_node 8 aiak_training_llm/train/sft/sft_llava_onevision2.py \
    --packing-sft-data \
    --micro-batch-size ${MBS} \
    --global-batch-size 128 \
    --seq-length 8192
