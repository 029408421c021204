#!/usr/bin/env bash
# The official openai client against gattn serve (scripts/openai_client_check.py): models,
# completions, streaming, logprobs, bad requests, an API key, and chat with Qwen3.5's template,
# thinking on and off (reasoning_content apart from the answer). The model: a tiny one whose
# tokenizer has ChatML's tokens and <think> / </think> added.
# Usage: serve_openai.sh GATTN TOKENIZER_JSON MODEL_CONFIG REPO_ROOT
set -euo pipefail
gattn=$1 tokenizer=$2 config=$3 root=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$tokenizer" "$config" "$work" <<'PY'
import json, sys
tokenizer, config, work = sys.argv[1:]
t = json.load(open(tokenizer))
next_id = 1 + max([*t["model"]["vocab"].values(), *(a["id"] for a in t["added_tokens"])])
for i, content in enumerate(["<|im_start|>", "<|im_end|>", "<think>", "</think>"]):
    t["added_tokens"].append({"id": next_id + i, "content": content, "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False,
                              "special": i < 2})
json.dump(t, open(f"{work}/tokenizer.json", "w"))
c = json.load(open(config))
c["vocab_size"] = next_id + 4
json.dump(c, open(f"{work}/config.json", "w"))
PY
"$gattn" init --config "$work/config.json" --out "$work/m" >/dev/null
cp "$work/tokenizer.json" "$work/m/tokenizer.json"
python3 "$root/scripts/openai_client_check.py" --gattn "$gattn" --checkpoint "$work/m" --chat --thinking
