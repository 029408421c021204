#!/usr/bin/env bash
# Two hosts on one machine, as a user's cluster of two: two network namespaces joined by a veth
# pair (10.77.x.1 and 10.77.x.2), each with its own host name, mpirun started in the first and
# OpenMPI's daemon in the second through an rsh shim (scripts/netns_rsh.sh); every byte between
# the ranks goes over TCP on the veth (no shared memory). Runs COMMAND as 2 ranks, one per host,
# then prints what crossed the veth. Needs root (ip netns); exits 77 where namespaces are not
# allowed.
#   scripts/two_hosts_mpirun.sh COMMAND [ARGS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
tag=g$$
net=$((($$ % 200) + 20))
a=${tag}a b=${tag}b
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; }
trap cleanup EXIT
if ! ip netns add "$a" 2>/dev/null || ! ip netns add "$b" 2>/dev/null; then
  echo "two_hosts_mpirun.sh: network namespaces are not allowed here (ip netns add failed); not run"
  exit 77
fi
ip link add "${tag}x" type veth peer name "${tag}y"
ip link set "${tag}x" netns "$a"
ip link set "${tag}y" netns "$b"
ip -n "$a" addr add "10.77.$net.1/24" dev "${tag}x"
ip -n "$b" addr add "10.77.$net.2/24" dev "${tag}y"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}x" up
ip -n "$b" link set "${tag}y" up
export GATTN_NETNS_HOSTS="10.77.$net.1=$a=hosta 10.77.$net.2=$b=hostb"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "hosts: hosta 10.77.$net.1 (namespace $a: mpirun, rank 0), hostb 10.77.$net.2" \
  "(namespace $b: orted through the shim, rank 1)"
ip netns exec "$a" unshare --uts sh -c 'hostname hosta && exec "$@"' sh \
  timeout 600 mpirun -np 2 --host "10.77.$net.1:1,10.77.$net.2:1" --bind-to none \
  --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl self,tcp --mca btl_tcp_if_include "10.77.$net.0/24" \
  --mca oob_tcp_if_include "10.77.$net.0/24" --mca mpi_yield_when_idle 1 \
  sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" >&2; exec "$@"' sh "$@"
ip -n "$a" -s link show "${tag}x" | awk '/RX:/{getline; rx=$1} /TX:/{getline; tx=$1}
  END {printf "the veth carried %.1f MB to hosta and %.1f MB from it\n", rx / 1e6, tx / 1e6}'
