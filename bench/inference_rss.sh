#!/usr/bin/env bash
# Peak resident memory of gattn generate against its memory plan: a model of CONFIG's shape
# (random weights, written once to MODEL_DIR) with TOKENIZER_JSON padded to the config's
# vocabulary by synthetic three-character tokens (random weights generate any id, which the
# tokenizer must be able to print), a prompt of about 475 tokens, 16 greedy tokens, with f32
# and bf16 weights. Prints each run's peak RSS (/usr/bin/time), the plan gattn reports
# (parameter bytes + decode memory + working set) and their ratio.
#   bench/inference_rss.sh GATTN CONFIG MODEL_DIR TOKENIZER_JSON [DTYPES="f32 bf16"]
set -euo pipefail
gattn=$1 config=$2 model=$3 tokenizer=$4
dtypes=${5:-"f32 bf16"}
if [ ! -f "$model/model.safetensors" ]; then
  "$gattn" init --config "$config" --out "$model" >/dev/null
  python3 - "$config" "$tokenizer" "$model/tokenizer.json" <<'PY'
import itertools, json, sys
vocab_size = json.load(open(sys.argv[1]))["vocab_size"]
t = json.load(open(sys.argv[2]))
vocab = t["model"]["vocab"]
chars = [k for k in vocab if len(k) == 1]
n = max(list(vocab.values()) + [a["id"] for a in t.get("added_tokens", [])]) + 1
for s in map("".join, itertools.product(chars, repeat=3)):
    if n >= vocab_size:
        break
    if s not in vocab:
        vocab[s] = n
        n += 1
json.dump(t, open(sys.argv[3], "w"))
PY
fi
prompt=$(python3 -c 'print(" ".join(["In the beginning God created the heaven and the earth."] * 25))')
for dtype in $dtypes; do
  err=$(mktemp)
  /usr/bin/time -f "maxrss_kib %M" "$gattn" generate --checkpoint "$model" \
    --weights-dtype "$dtype" --prompt "$prompt" --max-tokens 16 --temperature 0 --stats \
    >/dev/null 2>"$err"
  python3 - "$dtype" "$err" <<'PY'
import re, sys
text = open(sys.argv[2]).read()
rss = int(re.search(r"maxrss_kib (\d+)", text).group(1)) / 1024
m = re.search(r"memory plan: parameters ([0-9.]+) MiB \((\w+)\), decode memory ([0-9.]+) MiB, "
              r"working set ([0-9.]+) MiB", text)
if not m:  # a build before the plan was printed
    print(f"{sys.argv[1]}: peak RSS {rss:.1f} MiB (this gattn prints no memory plan)")
    sys.exit(0)
params, decode, work = float(m.group(1)), float(m.group(3)), float(m.group(4))
plan = params + decode + work
prompt = re.search(r"prompt (\d+) tokens", text).group(1)
print(f"{sys.argv[1]}: peak RSS {rss:.1f} MiB; plan {plan:.1f} MiB (parameters {params:.1f}, "
      f"decode memory {decode:.1f}, working set {work:.1f}; prompt {prompt} tokens); "
      f"RSS / plan {rss / plan:.3f}")
PY
  rm -f "$err"
done
