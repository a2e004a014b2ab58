#!/bin/bash
# A template script whose placeholders were never filled in.
export OFFLINE_PACKING_BMR=1
export OFFLINE_PACKED_DATA=1
CHECKPOINT=<path-to-stage1-checkpoint>
torchrun --nproc_per_node 8 pretrain_llava_onevision2.py --load "${CHECKPOINT}" --micro-batch-size 1
