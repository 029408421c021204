#!/usr/bin/env bash
# Two hosts on one machine, as a user's cluster of two: two network namespaces joined by a veth
# pair (10.77.x.1 and 10.77.x.2), each with its own host name, mpirun started in the first and
# OpenMPI's daemon in the second through an rsh shim (scripts/netns_rsh.sh); every byte between
# the ranks goes over TCP on the veth (no shared memory). Runs COMMAND as 2 ranks, one per host,
# then prints what crossed the link. Needs root (ip netns). Where namespaces are not allowed (or
# with TWO_HOSTS_LOOPBACK=1), the same over loopback: hosts 127.0.0.1 (mpirun) and 127.0.0.2 (its
# daemon started through the same shim, OpenMPI counting it as another host), TCP on `lo`; the
# first line says which ran. VETH_MTU sets the veth's MTU (default 1500, Ethernet's; 9000: jumbo
# frames).
#   scripts/two_hosts_mpirun.sh COMMAND [ARGS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
tag=g$$
net=$((($$ % 200) + 20))
a=${tag}a b=${tag}b
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; }
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# mpirun's flags for 2 ranks on hosts $1 and $2 over the subnet $3, the daemon started by the shim.
mpirun_flags() {
  echo -np 2 --host "$1:1,$2:1" --bind-to none --mca plm_rsh_agent "$here/netns_rsh.sh" \
    --mca plm_rsh_no_tree_spawn 1 --mca btl self,tcp --mca btl_tcp_if_include "$3" \
    --mca oob_tcp_if_include "$3" --mca mpi_yield_when_idle 1
}
# Each rank says where it runs, then becomes COMMAND.
announce=(sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" >&2; exec "$@"' sh)
# bytes BEFORE AFTER WHAT: the traffic between two `ip -s link` readings of a link.
traffic() {
  awk -v what="$3" 'NR == FNR {b[FNR] = $0; next} {a[FNR] = $0}
    END {printf "%s %.1f MB received and %.1f MB sent\n", what, (a[1] - b[1]) / 1e6, (a[2] - b[2]) / 1e6}' \
    <(echo "$1" | tr ' ' '\n') <(echo "$2" | tr ' ' '\n')
}
link_bytes() {  # link_bytes [ip -n NS] DEVICE: "rx tx" bytes so far
  "$@" | awk '/RX:/{getline; rx=$1} /TX:/{getline; tx=$1} END {print rx, tx}'
}

if [ "${TWO_HOSTS_LOOPBACK:-0}" != 1 ] && ip netns add "$a" 2>/dev/null &&
  ip netns add "$b" 2>/dev/null; then
  ip link add "${tag}x" type veth peer name "${tag}y"
  ip link set "${tag}x" netns "$a"
  ip link set "${tag}y" netns "$b"
  ip -n "$a" addr add "10.77.$net.1/24" dev "${tag}x"
  ip -n "$b" addr add "10.77.$net.2/24" dev "${tag}y"
  for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
  ip -n "$a" link set "${tag}x" mtu "${VETH_MTU:-1500}" up
  ip -n "$b" link set "${tag}y" mtu "${VETH_MTU:-1500}" up
  export GATTN_NETNS_HOSTS="10.77.$net.1=$a=hosta 10.77.$net.2=$b=hostb"
  echo "hosts: hosta 10.77.$net.1 (namespace $a: mpirun, rank 0), hostb 10.77.$net.2" \
    "(namespace $b: orted through the shim, rank 1), TCP over a veth pair"
  # shellcheck disable=SC2046  # the flags are words
  ip netns exec "$a" unshare --uts sh -c 'hostname hosta && exec "$@"' sh \
    timeout 600 mpirun $(mpirun_flags "10.77.$net.1" "10.77.$net.2" "10.77.$net.0/24") \
    "${announce[@]}" "$@"
  before="0 0"
  after=$(link_bytes ip -n "$a" -s link show "${tag}x")
  traffic "$before" "$after" "the veth (at hosta):"
  exit 0
fi
cleanup
why="TWO_HOSTS_LOOPBACK=1"
[ "${TWO_HOSTS_LOOPBACK:-0}" = 1 ] || why="network namespaces are not allowed here (ip netns add failed)"
export GATTN_NETNS_HOSTS="127.0.0.2=="  # no namespace: the shim starts the daemon as it is
echo "hosts: 127.0.0.1 (mpirun, rank 0), 127.0.0.2 (orted through the shim, rank 1), TCP over" \
  "loopback: $why"
before=$(link_bytes ip -s link show lo)
# shellcheck disable=SC2046
timeout 600 mpirun $(mpirun_flags 127.0.0.1 127.0.0.2 lo) "${announce[@]}" "$@"
traffic "$before" "$(link_bytes ip -s link show lo)" "loopback:"
