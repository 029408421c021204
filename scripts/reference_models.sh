#!/usr/bin/env bash
# The reference models of every quantization and perplexity figure (issue 34), trained here
# because no pretrained weights can be downloaded: `ref-dense` (configs/ref/dense.json: hidden 512,
# 8 layers, MLP 1536, 8 query / 4 key-value heads of 64, vocabulary 8,192 on the default corpus;
# every matrix's rows a multiple of 256, so llama.cpp's K-quants apply) and `ref-hybrid`
# (configs/ref/hybrid.json: the same with layers 3:1 Gated DeltaNet : attention), each as a
# baseline (no gate) and G1 (elementwise sigmoid gate after SDPA), seeds 0..SEEDS-1 paired (same
# initial values for shared tensors, same data order).
#
# Not committed: the models are rebuilt by this script and cached under
# runs/ref/<kind>-<gate>-s<seed> (train/ holds the run; its final model is the one checkpoint kept,
# train/checkpoints/step_<steps>). Resumable: run it again after an interruption and each run
# continues from its newest checkpoint; finished runs are skipped. Instances started side by side
# share the work: each run is locked (runs/ref/<run>/lock) by the instance training it, and the
# others go on to the next run (on 2 cores, two instances at THREADS=1 train two runs at once).
# The step count (configs/ref/run_<kind>.json) was chosen so that one run takes at least 60
# minutes at 2 threads on the machine it was sized on (see configs/ref/README.md). When every run of a kind has
# finished, runs/ref/hashes.txt records the SHA-256 of each final model.safetensors: training is
# deterministic for a given thread count and CPU, so a rebuild on the same machine type reproduces
# them.
#
# usage: scripts/reference_models.sh [dense|hybrid|all]   (default dense)
#        THREADS=1 (OMP_NUM_THREADS of each run; 0: all cores)  SEEDS=3  GATTN=build/gattn
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=${1:-dense}
[ "$kinds" = all ] && kinds="dense hybrid"
seeds=${SEEDS:-3}
threads=${THREADS:-1}
gattn=${GATTN:-build/gattn}
[ -x "$gattn" ] || scripts/setup.sh release

data=data/ref
mkdir -p data
exec 8>data/ref.lock
flock 8  # one instance prepares the data; the others wait for it
if [ ! -f "$data/val.bin" ]; then
  [ -f data/default/val.jsonl ] || "$gattn" corpus --out data/default
  mkdir -p "$data"
  "$gattn" tokenizer train --input data/default/train.jsonl --vocab-size 8192 \
    --out "$data/tokenizer.json"
  for split in train val; do
    "$gattn" data --tokenizer "$data/tokenizer.json" --input "data/default/$split.jsonl" \
      --out "$data/$split.bin"
  done
fi
exec 8>&-

export OMP_NUM_THREADS=$threads
[ "$threads" = 0 ] && unset OMP_NUM_THREADS
for kind in $kinds; do
  for ((seed = 0; seed < seeds; seed++)); do
    for gate in baseline g1; do
      run=runs/ref/$kind-$gate-s$seed
      [ -f "$run/train/summary.json" ] && continue  # finished
      mkdir -p "$run"
      exec 9>"$run/lock"
      flock -n 9 || { echo "== $run: another instance trains it"; continue; }
      args=(train --config "configs/ref/run_$kind.json" --seed "$seed" --out "$run/train")
      [ "$gate" = baseline ] && args+=(--gate '{"position": "none"}')
      [ -d "$run/train/checkpoints" ] && args+=(--resume)
      echo "== $run ($(date -u +%H:%M:%S))"
      "$gattn" "${args[@]}" >>"$run/log.txt" 2>&1 || {
        echo "reference_models: $run failed; its log: $run/log.txt" >&2
        tail -5 "$run/log.txt" >&2
        exit 1
      }
      # gattn train exits 0 when a signal stops it (after writing a checkpoint): stop here too
      # rather than go on to the next run
      if [ ! -f "$run/train/summary.json" ]; then
        echo "reference_models: $run stopped before its last step; run the script again to resume" >&2
        exit 1
      fi
      exec 9>&-
    done
  done
done

hashes=runs/ref/hashes.txt
(cd runs/ref && find . -path '*/train/checkpoints/step_*/model.safetensors' | sort | xargs -r sha256sum) \
  >"$hashes.tmp" && mv "$hashes.tmp" "$hashes"
echo "reference models: $(wc -l <"$hashes") finished; hashes in $hashes"
