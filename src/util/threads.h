// One thread count for OpenMP loops and OpenBLAS (built for OpenMP, so they share one pool).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "util/cpu_features.h"

namespace gattn {

// Fails for threads < 1; more threads than available_cores() are clamped. Returns the count set.
int set_num_threads(int threads);
int available_cores();  // the CPUs this process may run on
int num_threads();
std::string blas_core_name();

// Elements below which a cheap elementwise loop run once per tensor (a conversion, an init, a
// decode step's norms, RoPE, SwiGLU and residual adds) stays on one thread (`#pragma omp parallel
// if (n >= kMinParallelElements)`; a region costs ~0.7 us even with idle cores): where the cores
// are busy each region waits a scheduler time slice for its other threads (loading 72,003 tiny
// tensors took minutes beside two busy processes instead of 3 s). Not for AdamW's update: its
// sqrt and division gain from a second thread even on small tensors (S fp32 steps 1-3% slower
// with it).
constexpr int64_t kMinParallelElements = int64_t(1) << 16;

// The OpenBLAS core this CPU should run where OpenBLAS's own detection, which knows only the CPU
// models of its release, fell back to a generic one: Debian 12's 0.3.21 takes an Emerald Rapids
// Xeon (family 6 model 207) for a Prescott, whose sgemm runs 5x slower than its SkylakeX kernels
// (bench/gemm_rates). "SkylakeX" on a CPU with AVX-512 F/BW/DQ/VL, "Haswell" with AVX2 and FMA;
// empty where OpenBLAS's choice stands or OPENBLAS_CORETYPE is set. The variable is read once, when
// OpenBLAS loads: a program sets it and starts itself again (cli/main.cpp).
std::string blas_core_override();
// The rule itself: the core for a CPU with `cpu` where OpenBLAS chose `openblas_core`.
std::string blas_core_for(std::string_view openblas_core, const CpuFeatures& cpu);

// Sets the thread count (when threads > 0) for its lifetime and restores the previous one after.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : before_(num_threads()) {
    if (threads > 0) set_num_threads(threads);
  }
  ~ThreadScope() { set_num_threads(before_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int before_;
};

}  // namespace gattn
