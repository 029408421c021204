#include <algorithm>
#include <cstdlib>

#include "train/mpi_communicator.h"

namespace gattn {

int launched_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* size = std::getenv(name)) return std::max(1, std::atoi(size));
  return 1;
}

}  // namespace gattn
