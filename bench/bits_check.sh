#!/usr/bin/env bash
# Are two builds the same arithmetic? 4 training steps with each build's gattn, 15 gate variants
# (baseline and 14 gates), in fp32 and in bf16: the checkpoints' model and optimizer files
# compared byte for byte. Then every logit of the inference paths (gattn_infer_bits: rectangular
# forward, chunked prefill + decode, batched decode of three slots) of each trained model, with
# f32 and bf16 weights, compared byte for byte.
#   bench/bits_check.sh OLD_BUILD_DIR NEW_BUILD_DIR [NEW_ENV...]
# NEW_ENV (e.g. GATTN_ISA=avx2) is set for the new build's commands only.
# Prints each differing file and a count; exit 1 when any differs.
set -euo pipefail
old=$1 new=$2
shift 2
new_env=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$new/gattn" synthetic --out "$work/data" --vocab 60 --train-tokens 40000 --val-tokens 4000 >/dev/null
gates=(
 '{"position": "none"}'
 '{"position": "sdpa"}'
 '{"position": "sdpa", "granularity": "headwise"}'
 '{"position": "sdpa", "activation": "silu", "mode": "additive"}'
 '{"position": "sdpa", "activation": "silu"}'
 '{"position": "sdpa", "kind": "ns_sigmoid"}'
 '{"position": "sdpa", "kind": "ns_sigmoid", "granularity": "headwise"}'
 '{"position": "sdpa", "kind": "input_independent"}'
 '{"position": "sdpa", "activation": "identity", "mode": "additive"}'
 '{"position": "value"}'
 '{"position": "value", "activation": "silu", "granularity": "headwise"}'
 '{"position": "sdpa", "sharing": "head_shared"}'
 '{"position": "sdpa", "sharing": "head_shared", "activation": "silu"}'
 '{"position": "query", "activation": "silu"}'
 '{"position": "dense"}'
)
same=0 differ=0
compare() {  # compare OLD_FILE NEW_FILE LABEL
  if cmp -s "$1" "$2"; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFER: $3"; fi
}
for precision in fp32 bf16; do
  i=0
  for gate in "${gates[@]}"; do
    i=$((i + 1))
    cat > "$work/run.json" <<JSON
{"model": {"vocab_size": 64, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
 "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96, "max_position_embeddings": 128},
 "data": {"train": "$work/data/train.bin", "seq_len": 96}, "batch_size": 4, "steps": 4,
 "optimizer": {"lr": 0.003}, "precision": "$precision", "threads": 2, "out": "unused"}
JSON
    # A build that refuses a run (precision bf16 where it has no bf16 instructions) prints why,
    # and its files count as differing.
    for side in old new; do
      dir=$old vars=()
      [ $side = new ] && dir=$new vars=("${new_env[@]}")
      env "${vars[@]}" "$dir/gattn" train --config "$work/run.json" --gate "$gate" \
        --out "$work/$side-$precision-$i" >"$work/log" 2>&1 ||
        echo "$side train $precision $gate failed: $(grep 'error' "$work/log" | head -1)"
    done
    for f in model.safetensors optimizer.safetensors; do
      compare "$work/old-$precision-$i/checkpoints/step_00000004/$f" \
        "$work/new-$precision-$i/checkpoints/step_00000004/$f" "train $precision $gate $f"
    done
    [ "$precision" = bf16 ] && continue
    checkpoint="$work/old-$precision-$i/checkpoints/step_00000004"
    for dtype in f32 bf16; do
      OMP_NUM_THREADS=2 "$old/gattn_infer_bits" "$checkpoint" $dtype "$work/old.logits"
      env "${new_env[@]}" OMP_NUM_THREADS=2 "$new/gattn_infer_bits" "$checkpoint" $dtype "$work/new.logits"
      compare "$work/old.logits" "$work/new.logits" "inference $dtype weights $gate"
    done
    # The analysis (what it reads of every layer), plain and with interventions where the model
    # takes them; its JSON compared whole.
    for intervene in "" "--intervene value@first=zero" "--intervene layer:1:gate@first=open"; do
      for b in old new; do
        bin=$old/gattn; [ $b = new ] && bin="env ${new_env[*]} $new/gattn"
        $bin analyze --checkpoint "$checkpoint" --data "$work/data/val.bin" --sequences 4 --seq 64 \
          --map 1:2 --threads 2 $intervene --out "$work/$b.json" >/dev/null 2>"$work/$b.err" ||
          echo "refused" >"$work/$b.json"
      done
      compare "$work/old.json" "$work/new.json" "analyze $intervene $gate"
    done
  done
done
echo "byte-identical: $same, differing: $differ"
[ "$differ" = 0 ]
