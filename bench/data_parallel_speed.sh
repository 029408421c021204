#!/usr/bin/env bash
# Issue 36's speed target: 2 ranks x 1 thread against 1 process x 2 threads at the same global
# batch (grad_accum 2: one micro-batch per rank), on config M (configs/bench/m.json) with
# synthetic data. ROUNDS alternated rounds of STEPS steps each; each run's figure is the median
# tokens/s of its steps after the first (metrics.jsonl; evaluation is not in it); the ranks run
# with ZeRO-1 (the default) and without (--no-zero1). Prints each round and the medians with
# their ratios.
#   bench/data_parallel_speed.sh [ROUNDS=3] [STEPS=8]     GATTN=build/gattn
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} steps=${2:-8}
export GATTN=${GATTN:-build/gattn}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$GATTN" synthetic --out "$work/data" --vocab 8000 --train-tokens 2000000 --val-tokens 20000 \
  >/dev/null
run_config() {  # run_config THREADS
  cat >"$work/run$1.json" <<JSON
{"model": "$PWD/configs/bench/m.json",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 256, "window": "bos"},
 "batch_size": 4, "grad_accum": 2, "steps": $steps, "eval": {"every": 0, "windows": 1},
 "checkpoint": {"every": 0, "keep": 1}, "threads": $1, "precision": "fp32", "out": "unused",
 "optimizer": {"lr": 0.001}, "schedule": {"warmup_steps": 2}}
JSON
}
run_config 1
run_config 2
median_tokens_per_s() {
  python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"{statistics.median(r['tokens_per_s'] for r in rows[1:]):.0f}")
PY
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores; config M, 2 x 4 x 256 tokens per step"
one=() two=() zero=()
for ((r = 1; r <= rounds; r++)); do
  rm -rf "$work/a" "$work/b" "$work/c"
  case $((r % 3)) in  # the three engines in a rotated order each round
    1) order="one two zero" ;; 2) order="two zero one" ;; 0) order="zero one two" ;;
  esac
  for which in $order; do
    case $which in
      one) "$GATTN" train --config "$work/run2.json" --out "$work/a" >/dev/null 2>&1 ;;
      two) scripts/train_ranks.sh 2 --config "$work/run1.json" --out "$work/b" --no-zero1 \
             >/dev/null 2>&1 ;;
      zero) scripts/train_ranks.sh 2 --config "$work/run1.json" --out "$work/c" --zero1 \
              >/dev/null 2>&1 ;;
    esac
  done
  one+=("$(median_tokens_per_s "$work/a")")
  two+=("$(median_tokens_per_s "$work/b")")
  zero+=("$(median_tokens_per_s "$work/c")")
  echo "round $r: 1 process x 2 threads ${one[-1]} tok/s, 2 ranks x 1 thread ${two[-1]} tok/s" \
    "(${zero[-1]} tok/s with ZeRO-1)"
done
python3 - "${one[*]}" "${two[*]}" "${zero[*]}" <<'PY'
import statistics, sys
one, two, zero = ([float(x) for x in a.split()] for a in sys.argv[1:])
m1, m2, m3 = statistics.median(one), statistics.median(two), statistics.median(zero)
print(f"median: 1 process x 2 threads {m1:.0f} tok/s, 2 ranks x 1 thread {m2:.0f} tok/s "
      f"(ratio {m2 / m1:.3f}x), with ZeRO-1 {m3:.0f} tok/s (ratio {m3 / m1:.3f}x); target >= 1.0x")
print("per-round ratios: " + ", ".join(f"{b / a:.3f}/{c / a:.3f}" for a, b, c in zip(one, two, zero)))
PY
