// What the CPU can run, as the OS lets a process use it: the instruction-set extensions gattn's
// kernels (and oneDNN's) are chosen by. Read once with cpuid; a register file the OS does not save
// on a context switch (xgetbv) counts as absent. util/cpu_isa.h chooses the kernels from it.
#pragma once
#include <string>

namespace gattn {

struct CpuFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_vnni = false;
  bool amx_tile = false, amx_bf16 = false;
};

// This CPU's features (all false on a CPU that is not x86-64).
const CpuFeatures& cpu_features();

// The features that are present, by their /proc/cpuinfo names, space-separated ("none" if none).
std::string cpu_feature_names(const CpuFeatures& features);

}  // namespace gattn
