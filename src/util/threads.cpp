#include "util/threads.h"

#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

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

std::string blas_core_for(std::string_view core, const CpuFeatures& f) {
  const bool generic = core == "Prescott" || core == "Core2" || core == "Penryn" ||
                       core == "Nehalem" || core == "Sandybridge" || core == "Barcelona";
  if (!generic) return "";
  if (f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl) return "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  return "";
}

std::string blas_core_override() {
  if (std::getenv("OPENBLAS_CORETYPE")) return "";
  return blas_core_for(openblas_get_corename(), cpu_features());
}

}  // namespace gattn
