#!/usr/bin/env bash
# gattn serve as a process: listens on a free port (--port 0), answers /health and a completion,
# refuses a bad flag, and stops cleanly on SIGTERM. Never leaves a server running.
# Usage: serve.sh GATTN TOKENIZER_JSON MODEL_CONFIG
set -euo pipefail
gattn=$1 tokenizer=$2 config=$3
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$gattn" init --config "$config" --out "$work/m" >/dev/null
cp "$tokenizer" "$work/m/tokenizer.json"
"$gattn" serve --checkpoint "$work/m" --context 500 2>&1 | head -1 || true
"$gattn" serve --checkpoint "$work/m" --port 0 --parallel 2 2>"$work/log" &
pid=$!
for _ in $(seq 300); do
  grep -q "listening on" "$work/log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/log")
python3 - "$port" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
health = json.load(urllib.request.urlopen(base + "/health", timeout=30))
body = json.dumps({"prompt": "And God said", "max_tokens": 5, "temperature": 0}).encode()
request = urllib.request.Request(base + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
completion = json.load(urllib.request.urlopen(request, timeout=30))
print("health:", health["status"], "completion tokens:", completion["usage"]["completion_tokens"])
PY
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
echo "server exit: $rc"
cat "$work/log"
