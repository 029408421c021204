#!/usr/bin/env bash
# The longer proof of issue 36 (tests/cli/data_parallel.sh is the short one CI runs): N ranks
# against one process with grad_accum N, for N = 2 and 4, over STEPS (default 200) steps, in fp32
# and in bf16 (bf16_emulated where the CPU lacks avx512_bf16, named in the output), with ZeRO-1
# off and on, the reduction after the backward pass and overlapped with it. Each line compares the final checkpoint's model and optimizer bytes and every
# metrics record but its timing.
#   scripts/data_parallel_check.sh [STEPS]     GATTN=build/gattn
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-200}
export GATTN=${GATTN:-build/gattn}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bf16=bf16
grep -q avx512_bf16 /proc/cpuinfo || bf16=bf16_emulated
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs); bf16 runs as $bf16"
# The model of tests/cli/data_parallel.sh: 2 layers, hidden 64, G1.
"$GATTN" synthetic --out "$work/data" --train-tokens 200000 --val-tokens 4000 >/dev/null
for precision in fp32 "$bf16"; do
  for n in 2 4; do
    name=$precision-$n
    cat >"$work/$name.json" <<JSON
{"model": "$PWD/tests/cli/tiny_64.json",
 "data": {"train": "$work/data/train.bin", "val": "$work/data/val.bin", "seq_len": 32, "window": "bos"},
 "batch_size": 2, "grad_accum": $n, "steps": $steps, "eval": {"every": 50, "windows": 8},
 "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "precision": "$precision", "out": "unused",
 "optimizer": {"lr": 0.01}, "schedule": {"warmup_steps": 10}}
JSON
    "$GATTN" train --config "$work/$name.json" --out "$work/$name-one" >/dev/null 2>&1
    for flags in --no-zero1 --zero1 "--no-zero1 --overlap-reduction" "--zero1 --overlap-reduction"; do
      out=$work/$name-ranks${flags// /}
      # shellcheck disable=SC2086  # flags is a list of words
      scripts/train_ranks.sh "$n" --config "$work/$name.json" --out "$out" $flags >/dev/null 2>&1
      final=checkpoints/step_$(printf %08d "$steps")
      verdict=identical
      for f in model optimizer; do
        cmp -s "$work/$name-one/$final/$f.safetensors" "$out/$final/$f.safetensors" ||
          verdict="DIFFERENT ($f.safetensors)"
      done
      python3 - "$work/$name-one/metrics.jsonl" "$out/metrics.jsonl" <<'PY' || verdict="DIFFERENT (metrics)"
import json, sys
rows = [[{k: v for k, v in json.loads(l).items() if k not in ("tokens_per_s", "reduction_wait_s")} for l in open(p)]
        for p in sys.argv[1:]]
sys.exit(0 if rows[0] == rows[1] and len(rows[0]) > 0 else 1)
PY
      loss=$(tail -1 "$out/metrics.jsonl" | python3 -c "import json,sys; r=json.load(sys.stdin); print(f\"{r['loss']:.6f}\")")
      label=""
      [[ $flags == --zero1* ]] && label=" ZeRO-1"
      [[ $flags == *overlap* ]] && label="$label overlapped"
      printf '%-14s %d ranks%-19s vs 1 process grad_accum %d, %d steps: %s (final loss %s)\n' \
        "$precision" "$n" "$label" "$n" "$steps" "$verdict" "$loss"
    done
  done
done
