#!/usr/bin/env bash
# OpenMPI's remote shell for hosts that are network namespaces of this machine
# (scripts/two_hosts.sh): called as `ssh HOST COMMAND...` would be, it runs COMMAND (OpenMPI's
# daemon, orted) in the namespace that owns HOST's address, under the host name that namespace
# was given, as ssh would on another machine. GATTN_NETNS_HOSTS: "ADDRESS=NAMESPACE=HOSTNAME ...";
# an empty NAMESPACE runs COMMAND here as it is (the loopback hosts of scripts/two_hosts_mpirun.sh)..
set -euo pipefail
while [[ $# -gt 0 && $1 == -* ]]; do shift; done  # ssh options OpenMPI may pass
host=${1:?usage: netns_rsh.sh HOST COMMAND...}
shift
for entry in ${GATTN_NETNS_HOSTS:?}; do
  IFS== read -r address namespace name <<<"$entry"
  if [[ $host == "$address" || (-n $name && $host == "$name") ]]; then
    [ -n "$namespace" ] || exec sh -c "$*"
    exec ip netns exec "$namespace" unshare --uts sh -c "hostname '$name' && $*"
  fi
done
echo "netns_rsh.sh: no namespace for host '$host' in GATTN_NETNS_HOSTS" >&2
exit 255
