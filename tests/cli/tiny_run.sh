#!/usr/bin/env bash
# A tiny training setup for the tests that train: synthetic data (20,000 training and 4,000
# validation tokens) in WORK/data and WORK/run.json, a 6-step run config of MODEL_CONFIG (batch 4
# x 32, one thread, no evaluation or checkpoints on the way).
# Usage: tiny_run.sh GATTN MODEL_CONFIG WORK
set -euo pipefail
gattn=$1 config=$2 work=$3
"$gattn" synthetic --out "$work/data" --train-tokens 20000 --val-tokens 4000 >/dev/null
cat >"$work/run.json" <<JSON
{"model": "$config",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 32, "window": "bos"},
 "batch_size": 4, "steps": 6, "eval": {"every": 0, "windows": 8},
 "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "out": "unused", "optimizer": {"lr": 0.01}, "schedule": {"warmup_steps": 2}}
JSON
