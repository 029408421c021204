#!/usr/bin/env bash
# Data-parallel training across two hosts (issue 36): 2 ranks in two network namespaces joined by
# a veth pair (where namespaces are allowed; the reduction overlapped with the backward pass),
# then on two loopback addresses, TCP only (scripts/two_hosts.sh), 20 steps of the 2-layer
# hidden-64 model each, bitwise equal to one process with grad_accum 2.
# Usage: two_hosts.sh GATTN
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$1" synthetic --out "$work/data" --train-tokens 40000 --val-tokens 4000 >/dev/null
cat >"$work/run.json" <<JSON
{"model": "$here/tiny_64.json",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 32, "window": "bos"},
 "batch_size": 2, "grad_accum": 2, "steps": 20, "eval": {"every": 10, "windows": 8},
 "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "precision": "fp32", "out": "unused",
 "optimizer": {"lr": 0.01}, "schedule": {"warmup_steps": 2}}
JSON
GATTN=$1 "$here/../../scripts/two_hosts.sh" "$work/run.json" "$work/out" --overlap-reduction
GATTN=$1 TWO_HOSTS_LOOPBACK=1 "$here/../../scripts/two_hosts.sh" "$work/run.json" "$work/loopback"
