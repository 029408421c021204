#!/usr/bin/env bash
# Issue 30's pre-registered experiments in order, one run at a time at 1 thread (RESULTS.md
# sections 11-13), resumable: rerun the same command to continue after any interruption.
#   experiments/issue30.sh [GATTN=build/gattn] [LOGS=runs/experiments/logs]
# Copy the binary first if you keep building (a run must not see it relinked mid-way).
set -euo pipefail
cd "$(dirname "$0")/.."
gattn=$(realpath "${1:-build/gattn}")
logs=${2:-runs/experiments/logs}
mkdir -p "$logs"
run() { echo "== $1 ($(date -u +%H:%M))"; python3 "experiments/$1.py" --gattn "$gattn" --threads 1 "${@:2}" >"$logs/$1.log" 2>&1; }
run confirm          # section 11: seeds 12-23
run sink_cause       # section 13: trains its sources (section 9's baseline and G1 runs) if missing
run seeds            # section 9 regenerated, with per-seed values (its other four gates)
if [ ! -f data/default/val.bin ]; then  # section 12 needs the default corpus (as scripts/quickstart.sh)
  "$gattn" corpus --out data/default
  "$gattn" tokenizer train --input data/default/train.jsonl --vocab-size 4096 --out data/default/tokenizer.json
  "$gattn" data --tokenizer data/default/tokenizer.json --input data/default/train.jsonl --out data/default/train.bin
  "$gattn" data --tokenizer data/default/tokenizer.json --input data/default/val.jsonl --out data/default/val.bin
fi
run lr_budget        # section 12
echo "== done ($(date -u +%H:%M))"
