#!/usr/bin/env bash
# gattn generate --weights-dtype bf16 (weights read straight into bf16 storage; a prompt longer
# than a decode step, so its prefill runs a bf16 weight GEMM) on a tiny model: it runs, and its
# greedy text is printed; on this model it equals the f32 weights' text.
# Usage: generate_bf16.sh GATTN TOKENIZER_JSON MODEL_CONFIG
set -euo pipefail
gattn=$1 tokenizer=$2 config=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" init --config "$config" --out "$work/m" --seed 3 >/dev/null
prompt="And God said, Let there be light: and there was light. And God saw the light"
for dtype in f32 bf16; do
  "$gattn" generate --checkpoint "$work/m" --tokenizer "$tokenizer" --weights-dtype "$dtype" \
    --prompt "$prompt" --max-tokens 12 --temperature 0 >"$work/$dtype.txt"
  echo "$dtype: exit $?, $(wc -c <"$work/$dtype.txt") bytes"
done
cmp -s "$work/f32.txt" "$work/bf16.txt" && echo "same greedy text" || echo "different greedy text"
