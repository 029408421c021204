#!/usr/bin/env bash
# Data-parallel training on this machine: N ranks of `gattn train` under OpenMPI's mpirun, with
# the flags a small machine or a container needs (docs/SCALING.md says why each is there).
#   scripts/train_ranks.sh N --config RUN [gattn train flags...]
# GATTN: the binary (default build/gattn). MPIRUN_FLAGS: more mpirun flags (e.g. --hostfile).
# The run's grad_accum is the global number of micro-batches: N (a power of two) times a power of
# two; each rank runs the config's "threads".
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 N --config RUN [gattn train flags...]" >&2; exit 2; }
ranks=$1
shift
gattn=${GATTN:-$(dirname "$0")/../build/gattn}
# Containers often run as root, which mpirun refuses without these two.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086  # MPIRUN_FLAGS is a list of flags
exec mpirun -np "$ranks" --oversubscribe --bind-to none \
  --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
  --mca mpi_yield_when_idle 1 ${MPIRUN_FLAGS:-} "$gattn" train "$@"
