#!/usr/bin/env bash
# gattn generate on a model whose logits overflow (one lm_head row of finite 3.4e38 weights, in
# an exported Hugging Face folder without gattn's checksums): an error naming the position and
# a non-zero exit at temperature 0 and 1, never text sampled from NaN or infinite logits.
# Usage: generate_nonfinite.sh GATTN TOKENIZER_JSON MODEL_CONFIG
set -euo pipefail
gattn=$1 tokenizer=$2 config=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gattn" init --config "$config" --out "$work/m" >/dev/null
"$gattn" export --checkpoint "$work/m" --format authors --dtype f32 --tokenizer "$tokenizer" \
  --out "$work/hf" >/dev/null
run() {
  local rc=0
  "$gattn" generate --checkpoint "$work/hf" --prompt "And God said" --max-tokens 8 \
    --temperature "$1" >"$work/out" 2>"$work/err" || rc=$?
  echo "temperature $1: exit $rc $(cat "$work/err")"
}
run 0
python3 - "$work/hf/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
header["__metadata__"] = {"format": "pt"}  # no checksums: the edit is what is loaded
tensor = header["lm_head.weight"]
cols = tensor["shape"][1]
start = tensor["data_offsets"][0]  # row 0
data[start:start + 4 * cols] = struct.pack(f"<{cols}f", *[3.4e38] * cols)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
PY
run 0
run 1
