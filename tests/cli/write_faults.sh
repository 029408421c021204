#!/usr/bin/env bash
# A full disk at an exact write (GATTN_FAULT_WRITE_ENOSPC=N fails the Nth file write with ENOSPC)
# stops gattn with an error naming the file, never a silent exit 0: the first metrics record,
# a checkpoint after three records, and standard output on /dev/full.
# Usage: write_faults.sh GATTN
set -euo pipefail
gattn=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" synthetic --out "$work/data" --vocab 30 --train-tokens 20000 --val-tokens 2000 >/dev/null
cat >"$work/model.json" <<JSON
{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
 "intermediate_size": 32, "max_position_embeddings": 32}
JSON
cat >"$work/run.json" <<JSON
{"model": "model.json",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 16},
 "batch_size": 2, "steps": 3, "eval": {"every": 0, "windows": 2},
 "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "out": "$work/run"}
JSON
expect_failure() {  # NAME FAULT_AT PATTERN ARGS...
  local name=$1 at=$2 pattern=$3
  shift 3
  if GATTN_FAULT_WRITE_ENOSPC=$at "$gattn" "$@" >"$work/out" 2>"$work/err"; then
    echo "$name: exit 0 despite a failed write"; exit 1
  fi
  grep -E "$pattern" "$work/err" >/dev/null || { echo "$name: unexpected error:"; cat "$work/err"; exit 1; }
  echo "$name: $(tail -1 "$work/err")"
}
expect_failure metrics 1 "gattn: error: .*/metrics.jsonl: write failed \(No space left on device\)" \
  train --config "$work/run.json" --out "$work/run1"
expect_failure checkpoint 4 "gattn: error: .*/checkpoints/.*: write failed \(No space left on device\)" \
  train --config "$work/run.json" --out "$work/run2"
[ "$(wc -l <"$work/run2/metrics.jsonl")" = 3 ] || { echo "run2: metrics records lost"; exit 1; }
if "$gattn" params --config "$work/model.json" >/dev/full 2>"$work/err"; then
  echo "stdout: exit 0 on /dev/full"; exit 1
fi
echo "stdout: $(cat "$work/err")"
