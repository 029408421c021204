#!/usr/bin/env bash
# gattn init, data and eval end to end: an untrained model scores about ln(vocab) nats per token,
# and evaluating text directly gives exactly what evaluating its token shard gives.
# Usage: eval_text.sh GATTN TOKENIZER_JSON MODEL_CONFIG TEXT
set -euo pipefail
gattn=$1 tokenizer=$2 config=$3 text=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" init --config "$config" --out "$work/model" --seed 1 >/dev/null
"$gattn" data --tokenizer "$tokenizer" --input "$text" --out "$work/text.bin"
direct=$("$gattn" eval --checkpoint "$work/model" --tokenizer "$tokenizer" --data "$text" --seq 64 | tail -1)
shard=$("$gattn" eval --checkpoint "$work/model" --tokenizer "$tokenizer" --data "$work/text.bin" --seq 64 | tail -1)
echo "text:  $direct"
echo "shard: $shard"
[ "$direct" = "$shard" ] || { echo "text and shard evaluations differ"; exit 1; }
if "$gattn" eval --checkpoint "$work/model" --data "$text" 2>"$work/err"; then exit 1; fi
cat "$work/err"
