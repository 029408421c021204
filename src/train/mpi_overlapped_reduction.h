// The MPI communicator's OverlappedReduction (train/communicator.h): a thread of its own makes
// every MPI call from the reduction's start to its finish (MPI_THREAD_SERIALIZED), so the ranks
// exchange the ranges handed over while the caller computes. The ranges handed over together are
// cut at the shards' bounds into messages of at most 4 Mi values (several ranges in one message
// as an MPI derived datatype); a message goes to the owner of its shard, which adds every rank's
// values in the rank tree as reduce_scatter does (and, to gather, sends the sum back to each
// rank), so the bits are reduce_scatter's.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "train/collective_watchdog.h"
#include "train/communicator.h"
#include "util/aligned.h"

namespace gattn {

// `values` [count] on rank `rank` of `world` (MPI_COMM_WORLD). finish() waits under `watchdog`.
// The other ranks' values of this rank's shard come into `received` [rank] (grown to the shard's
// size where smaller; the communicator keeps them from step to step: allocating and zeroing
// them anew would cost more than their transfer).
std::unique_ptr<OverlappedReduction> mpi_overlapped_reduction(float* values, int64_t count,
                                                              bool gather, int rank, int world,
                                                              CollectiveWatchdog& watchdog,
                                                              std::vector<AlignedFloats>& received);

}  // namespace gattn
