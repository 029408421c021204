#!/usr/bin/env bash
# gattn serve as a process: listens on a free port (--port 0), answers /health and a completion,
# refuses a bad flag, and stops cleanly on SIGTERM, also in the middle of a stream (which then
# ends with an error event and [DONE]). Never leaves a server running.
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
# Starts gattn serve on MODEL with its log in LOG; sets pid and port.
start() {
  "$gattn" serve --checkpoint "$1" --port 0 --parallel 2 2>"$2" &
  pid=$!
  for _ in $(seq 300); do
    grep -q "listening on" "$2" && break
    kill -0 "$pid" 2>/dev/null || { cat "$2"; exit 1; }
    sleep 0.1
  done
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$2")
}
# Waits for the server to exit; prints its exit status.
stopped() {
  local rc=0
  wait "$pid" || rc=$?
  pid=""
  echo "$1 exit: $rc"
}
"$gattn" init --config "$config" --out "$work/m" >/dev/null
cp "$tokenizer" "$work/m/tokenizer.json"
"$gattn" serve --checkpoint "$work/m" --context 500 2>&1 | head -1 || true
# The default context is the model's max_position_embeddings: refused when its decode memory
# cannot fit (256 slots x 2^20 positions x 256 bytes of keys and values: 64 GiB).
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['max_position_embeddings']=1<<20; json.dump(c,open(sys.argv[2],'w'))" "$config" "$work/long_context.json"
"$gattn" init --config "$work/long_context.json" --out "$work/big" >/dev/null
cp "$tokenizer" "$work/big/tokenizer.json"
"$gattn" serve --checkpoint "$work/big" --parallel 256 2>&1 | head -1 || true
start "$work/m" "$work/log"
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
stopped server
cat "$work/log"

# SIGTERM while a long stream runs (a model slow enough that it cannot finish first).
echo '{"vocab_size": 8192, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
       "intermediate_size": 512, "max_position_embeddings": 4096}' >"$work/long.json"
"$gattn" init --config "$work/long.json" --out "$work/long" >/dev/null
cp "$tokenizer" "$work/long/tokenizer.json"
start "$work/long" "$work/long.log"
python3 - "$port" "$pid" <<'PY'
import json, os, signal, sys, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
body = json.dumps({"prompt": "And", "max_tokens": 4000, "stream": True}).encode()
request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
events = []
for line in urllib.request.urlopen(request, timeout=60):
    if line.startswith(b"data: "):
        events.append(line[6:].decode().strip())
        if len(events) == 1:
            os.kill(pid, signal.SIGTERM)
error = json.loads(events[-2])["error"]
print(f"stream end after {len(events)} events: {error['type']}: {error['message']}, {events[-1]}")
PY
stopped "stream server"
