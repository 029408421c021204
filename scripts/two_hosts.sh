#!/usr/bin/env bash
# Data-parallel training across two hosts as a user runs it, on one machine: two network
# namespaces joined by a veth pair (10.77.x.1 and 10.77.x.2), each with its own host name, mpirun
# started in the first, OpenMPI's daemon in the second through an rsh shim
# (scripts/netns_rsh.sh), and every byte between the ranks over TCP on the veth (no shared
# memory). Runs 2 ranks of RUN (grad_accum 2) across the hosts and 1 process of it, and compares
# the final checkpoints' bytes and the metrics. Needs root (ip netns); exits 77 where namespaces
# are not allowed.
#   scripts/two_hosts.sh RUN OUT_DIR      GATTN=build/gattn
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=${1:?usage: two_hosts.sh RUN OUT_DIR}
out=${2:?usage: two_hosts.sh RUN OUT_DIR}
gattn=$(realpath "${GATTN:-$here/../build/gattn}")
tag=g$$
net=$((($$ % 200) + 20))
a=${tag}a b=${tag}b
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; }
trap cleanup EXIT
if ! ip netns add "$a" 2>/dev/null || ! ip netns add "$b" 2>/dev/null; then
  echo "two_hosts.sh: network namespaces are not allowed here (ip netns add failed); not run"
  exit 77
fi
ip link add "${tag}x" type veth peer name "${tag}y"
ip link set "${tag}x" netns "$a"
ip link set "${tag}y" netns "$b"
ip -n "$a" addr add "10.77.$net.1/24" dev "${tag}x"
ip -n "$b" addr add "10.77.$net.2/24" dev "${tag}y"
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
done
ip -n "$a" link set "${tag}x" up
ip -n "$b" link set "${tag}y" up
export GATTN_NETNS_HOSTS="10.77.$net.1=$a=hosta 10.77.$net.2=$b=hostb"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
echo "hosts: hosta 10.77.$net.1 (namespace $a, mpirun and rank 0), hostb 10.77.$net.2" \
  "(namespace $b, orted through the shim, rank 1); veth ${tag}x <-> ${tag}y"
ip netns exec "$a" unshare --uts sh -c 'hostname hosta && exec "$@"' sh \
  timeout 300 mpirun -np 2 --host "10.77.$net.1:1,10.77.$net.2:1" --bind-to none \
  --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl self,tcp --mca btl_tcp_if_include "10.77.$net.0/24" \
  --mca oob_tcp_if_include "10.77.$net.0/24" --mca mpi_yield_when_idle 1 \
  --tag-output sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" >&2; exec "$@"' sh \
  "$gattn" train --config "$run" --out "$out/two_hosts" >"$out/two_hosts.out" 2>"$out/two_hosts.err" ||
  { tail -20 "$out/two_hosts.err"; exit 1; }
grep -o "rank [01] on host[ab]" "$out/two_hosts.err" | sort -u
# What crossed the veth (OpenMPI's daemons' wire-up and the ranks' collectives).
ip -n "$a" -s link show "${tag}x" | awk '/RX:/{getline; rx=$1} /TX:/{getline; tx=$1}
  END {printf "the veth carried %.1f MB to hosta and %.1f MB from it\n", rx / 1e6, tx / 1e6}'
"$gattn" train --config "$run" --out "$out/one" >/dev/null 2>&1
steps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['steps'])" "$run")
final=checkpoints/step_$(printf %08d "$steps")
for f in model optimizer; do
  cmp "$out/one/$final/$f.safetensors" "$out/two_hosts/$final/$f.safetensors"
done
python3 - "$out/one/metrics.jsonl" "$out/two_hosts/metrics.jsonl" <<'PY'
import json, sys
rows = [[{k: v for k, v in json.loads(l).items() if k != "tokens_per_s"} for l in open(p)]
        for p in sys.argv[1:]]
assert rows[0] == rows[1] and rows[0], "metrics differ"
PY
echo "2 ranks on two hosts (TCP over a veth pair) = 1 process with grad_accum 2 over $steps steps:" \
  "model, optimizer state and metrics identical"
