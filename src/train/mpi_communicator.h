// The communicator of a run started by mpirun (OpenMPI 4; docs/SCALING.md): MPI_COMM_WORLD with
// the canonical order of train/communicator.h. The reduction is written here, not left to
// MPI_Reduce_scatter, whose order MPI does not fix: each rank sends every other rank that rank's
// shard and sums the shards it receives in the rank tree.
#pragma once
#include <memory>

#include "train/collective_watchdog.h"
#include "train/communicator.h"
#include "util/log.h"

namespace gattn {

// The number of processes the launcher started (OMPI_COMM_WORLD_SIZE from mpirun, PMI_SIZE from
// srun or MPICH's launchers); 1 when none says.
int launched_world_size();

// Initialises MPI (a process does it once) and returns MPI_COMM_WORLD's communicator;
// MPI_Finalize when it is destroyed. A collective that waits longer than the watchdog allows
// writes the watchdog's message to `log` and ends the process (exit status 3), which ends the
// job. An Error naming the build when gattn was built without MPI.
std::unique_ptr<Communicator> mpi_communicator(LogSink& log,
                                               CollectiveWatchdog::Options watchdog = {});

// Ends every rank of the job (MPI_Abort) after one failed: the others would wait in a collective
// for it. Exits the process when built without MPI.
[[noreturn]] void abort_all_ranks(int code);

}  // namespace gattn
