#include "util/threads.h"

#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>

#include "util/error.h"

namespace gattn {

int available_cores() {
  // The process's CPU affinity (taskset, cgroups cpusets), not the machine's core count.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return omp_get_num_procs();
}

int set_num_threads(int threads) {
  if (threads < 1) fail("thread count must be a positive integer, got ", threads);
  // More threads than cores only slows the GEMMs down, and under a memory limit OpenBLAS's
  // per-thread buffers fail to map and it retries forever: clamp, and say so.
  threads = std::min(threads, available_cores());
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  return threads;
}

int num_threads() { return omp_get_max_threads(); }

std::string blas_core_name() { return openblas_get_corename(); }

}  // namespace gattn
