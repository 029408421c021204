#!/usr/bin/env bash
# Issue 36's overlap target: how much of the gradients' all-reduce the backward pass hides, over
# TCP between two hosts (scripts/two_hosts_mpirun.sh: two network namespaces joined by a veth),
# on configs/bench/vocab151k.json (218.5 M parameters: a 874 MB fp32 gradient), 2 ranks x 1
# thread, BATCH sequences of 256 tokens per rank (grad_accum 2), synthetic data (ids below 8000).
# ROUNDS alternated rounds
# of two runs of STEPS steps: the reduction overlapped with the backward pass
# (--overlap-reduction) and after it (the default). Each run's figures are medians over its steps after the
# first: the step's seconds (from metrics.jsonl's tokens_per_s) and reduction_wait_s (the step's
# wait for the reduction after the backward pass: in the sequential run, the all-reduce's whole
# time, T_comm). Hidden fraction = (T_sequential - T_overlapped) / T_comm, per round and of the
# medians. ZERO1=1 adds --zero1 to both (a reduce-scatter then, not an all-reduce). The window
# the reduction has is the blocks' backward pass after the LM head's (the tied embedding's
# gradient, 71% of the values, is complete then but for the rows of the step's ids), so it grows
# with BATCH while the all-reduce does not.
#   bench/overlap_speed.sh [ROUNDS=5] [STEPS=6] [BATCH=4]     GATTN=build/gattn
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} steps=${2:-6} batch=${3:-4}
gattn=$(realpath "${GATTN:-build/gattn}")
extra=(--no-zero1)
[ "${ZERO1:-0}" = 1 ] && extra=(--zero1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" synthetic --out "$work/data" --vocab 8000 --train-tokens 400000 --val-tokens 20000 \
  >/dev/null
cat >"$work/run.json" <<JSON
{"model": "$PWD/configs/bench/vocab151k.json",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 256, "window": "bos"},
 "batch_size": $batch, "grad_accum": 2, "steps": $steps, "eval": {"every": 0, "windows": 1},
 "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "precision": "fp32", "out": "unused",
 "optimizer": {"lr": 0.001}, "schedule": {"warmup_steps": 2}}
JSON
medians() {  # medians METRICS: step seconds and reduction wait, medians after the first step
  python3 - "$1" "$batch" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])][1:]
step = statistics.median(256 * 2 * int(sys.argv[2]) / r["tokens_per_s"] for r in rows)
print(f"{step:.4f} {statistics.median(r['reduction_wait_s'] for r in rows):.4f}")
PY
}
run() {  # run OUT [FLAGS...]
  local out=$1
  shift
  scripts/two_hosts_mpirun.sh "$gattn" train --config "$work/run.json" --out "$out" \
    "${extra[@]}" "$@" >"$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores;" \
  "vocab151k, 2 ranks x 1 thread over a veth, 2 x $batch x 256 tokens per step ${extra[*]}"
results=()
for ((r = 1; r <= rounds; r++)); do
  rm -rf "$work/o" "$work/s"
  if ((r % 2)); then run "$work/o" --overlap-reduction; run "$work/s"
  else run "$work/s"; run "$work/o" --overlap-reduction; fi
  read -r ostep owait <<<"$(medians "$work/o/metrics.jsonl")"
  read -r sstep swait <<<"$(medians "$work/s/metrics.jsonl")"
  results+=("$ostep $owait $sstep $swait")
  echo "round $r: overlapped step $ostep s (wait $owait s), sequential step $sstep s" \
    "(all-reduce $swait s); $(grep -m1 '^the veth' "$work/o.log")"
done
python3 - "${results[@]}" <<'PY'
import statistics, sys
rows = [[float(x) for x in a.split()] for a in sys.argv[1:]]
o, ow, s, sw = (statistics.median(c) for c in zip(*rows))
print("per-round hidden fractions: " +
      ", ".join(f"{(b - a) / d:.2f}" for a, _, b, d in rows))
print(f"median: overlapped step {o:.3f} s (waits {ow:.3f} s after the backward pass), "
      f"sequential step {s:.3f} s, T_comm {sw:.3f} s; hidden (T_seq - T_ovl) / T_comm = "
      f"{(s - o) / sw:.2f}; the wait's share hidden 1 - wait / T_comm = {1 - ow / sw:.2f}; "
      "target >= 0.50")
PY
