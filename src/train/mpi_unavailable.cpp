// The build without MPI (scripts/setup.sh installs OpenMPI; CMake found none).
#include <cstdlib>

#include "train/mpi_communicator.h"
#include "util/error.h"

namespace gattn {

std::unique_ptr<Communicator> mpi_communicator(LogSink&, CollectiveWatchdog::Options) {
  fail(
      "this gattn was built without MPI (libopenmpi-dev was not found when it was configured), "
      "so it cannot run as one of ",
      launched_world_size(),
      " ranks; rebuild after installing "
      "it (scripts/setup.sh)");
}

void abort_all_ranks(int code) { std::_Exit(code); }

}  // namespace gattn
