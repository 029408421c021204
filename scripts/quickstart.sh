#!/usr/bin/env bash
# README command one. Sets up and builds gattn, prepares the default corpus (three public-domain
# texts from Debian packages) and its tokenizer, trains a baseline and a G1-gated model of the same
# shape on the same tokens (SEEDS seeds each, paired: same initial values for shared tensors and the
# same data order), compares them on the held-out split and writes the side-by-side HTML report
# (runs/quickstart/report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${SEEDS:-2}
elapsed() { echo $((SECONDS - $1)); }

start=$SECONDS
scripts/setup.sh release
echo "== set-up and build: $(elapsed "$start") s"

step=$SECONDS
build/gattn corpus --out data/default
build/gattn tokenizer train --input data/default/train.jsonl --vocab-size 4096 \
  --out data/default/tokenizer.json
build/gattn data --tokenizer data/default/tokenizer.json --input data/default/train.jsonl \
  --out data/default/train.bin
build/gattn data --tokenizer data/default/tokenizer.json --input data/default/val.jsonl \
  --out data/default/val.bin
echo "== corpus, tokenizer and token shards: $(elapsed "$step") s"

step=$SECONDS
rm -rf runs/quickstart
baselines=() candidates=()
for ((seed = 0; seed < seeds; seed++)); do
  echo "== seed $seed: baseline"
  build/gattn train --config configs/quickstart/run.json --seed "$seed" \
    --gate '{"position": "none"}' --out "runs/quickstart/baseline-s$seed" >/dev/null
  echo "== seed $seed: G1 elementwise sigmoid gate"
  build/gattn train --config configs/quickstart/run.json --seed "$seed" \
    --out "runs/quickstart/g1-s$seed" >/dev/null
  baselines+=("runs/quickstart/baseline-s$seed") candidates+=("runs/quickstart/g1-s$seed")
done
echo "== training ($((2 * seeds)) runs): $(elapsed "$step") s"

step=$SECONDS
build/gattn compare --baseline "${baselines[@]}" --candidate "${candidates[@]}" \
  --html runs/quickstart/report.html
echo "== evaluation: $(elapsed "$step") s; total $(elapsed "$start") s"
