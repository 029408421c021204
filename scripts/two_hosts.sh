#!/usr/bin/env bash
# Data-parallel training across two hosts (scripts/two_hosts_mpirun.sh: network namespaces
# joined by a veth pair, or loopback where namespaces are not allowed or TWO_HOSTS_LOOPBACK=1;
# TCP only): 2 ranks of RUN (grad_accum 2), one per host, against 1 process of it; compares the
# final checkpoints' bytes and the metrics.
#   scripts/two_hosts.sh RUN OUT_DIR [gattn train flags...]      GATTN=build/gattn
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=${1:?usage: two_hosts.sh RUN OUT_DIR}
out=${2:?usage: two_hosts.sh RUN OUT_DIR [gattn train flags...]}
shift 2
gattn=$(realpath "${GATTN:-$here/../build/gattn}")
mkdir -p "$out"
status=0
"$here/two_hosts_mpirun.sh" "$gattn" train --config "$run" --out "$out/two_hosts" "$@" \
  >"$out/two_hosts.out" 2>"$out/two_hosts.err" || status=$?
[ "$status" -eq 0 ] || { tail -20 "$out/two_hosts.out" "$out/two_hosts.err"; exit 1; }
grep -E "^hosts:|^the veth|^loopback:" "$out/two_hosts.out"
grep -o "rank [01] on .*" "$out/two_hosts.err" | sort -u
link=$(grep -q "over loopback" "$out/two_hosts.out" && echo "TCP over loopback" ||
  echo "TCP over a veth pair")
"$gattn" train --config "$run" --out "$out/one" >/dev/null 2>&1
steps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['steps'])" "$run")
final=checkpoints/step_$(printf %08d "$steps")
for f in model optimizer; do
  cmp "$out/one/$final/$f.safetensors" "$out/two_hosts/$final/$f.safetensors"
done
python3 - "$out/one/metrics.jsonl" "$out/two_hosts/metrics.jsonl" <<'PY'
import json, sys
rows = [[{k: v for k, v in json.loads(l).items() if k not in ("tokens_per_s", "reduction_wait_s")} for l in open(p)]
        for p in sys.argv[1:]]
assert rows[0] == rows[1] and rows[0], "metrics differ"
PY
echo "2 ranks on two hosts ($link) = 1 process with grad_accum 2 over $steps steps:" \
  "model, optimizer state and metrics identical"
