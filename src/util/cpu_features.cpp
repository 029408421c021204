#include "util/cpu_features.h"

#include <cstdint>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GATTN_CPUID 1
#endif

namespace gattn {

namespace {
#ifdef GATTN_CPUID
struct Registers {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf) {
  Registers r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return Registers{};
  return r;
}

bool bit(unsigned word, int n) { return (word >> n & 1u) != 0; }

// XCR0: the register state the OS saves and restores (only with OSXSAVE set).
uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return uint64_t(hi) << 32 | lo;
}

// Intel SDM vol. 1, 13.2 and 14-15; the cpuid bits of vol. 2, "CPUID".
CpuFeatures detect() {
  CpuFeatures f;
  const unsigned max_leaf = cpuid(0, 0).eax;
  if (max_leaf < 1) return f;
  const Registers l1 = cpuid(1, 0);
  if (!bit(l1.ecx, 27)) return f;  // no OSXSAVE: no AVX state at all
  const uint64_t xcr = xcr0();
  const bool ymm = (xcr & 0x6) == 0x6;            // SSE and AVX state
  const bool zmm = ymm && (xcr & 0xe0) == 0xe0;   // opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (xcr & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  if (!ymm || !bit(l1.ecx, 28) || max_leaf < 7) return f;
  f.fma = bit(l1.ecx, 12);
  const Registers l7 = cpuid(7, 0);
  f.avx2 = bit(l7.ebx, 5);
  if (zmm) {
    f.avx512f = bit(l7.ebx, 16);
    f.avx512dq = bit(l7.ebx, 17);
    f.avx512cd = bit(l7.ebx, 28);
    f.avx512bw = bit(l7.ebx, 30);
    f.avx512vl = bit(l7.ebx, 31);
    f.avx512_vnni = bit(l7.ecx, 11);
    if (l7.eax >= 1) f.avx512_bf16 = bit(cpuid(7, 1).eax, 5);
  }
  if (tiles) {
    f.amx_bf16 = bit(l7.edx, 22);
    f.amx_tile = bit(l7.edx, 24);
  }
  return f;
}
#else
CpuFeatures detect() { return CpuFeatures{}; }
#endif
}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string cpu_feature_names(const CpuFeatures& f) {
  const std::pair<bool, const char*> named[] = {{f.avx2, "avx2"},
                                                {f.fma, "fma"},
                                                {f.avx512f, "avx512f"},
                                                {f.avx512cd, "avx512cd"},
                                                {f.avx512bw, "avx512bw"},
                                                {f.avx512dq, "avx512dq"},
                                                {f.avx512vl, "avx512vl"},
                                                {f.avx512_bf16, "avx512_bf16"},
                                                {f.avx512_vnni, "avx512_vnni"},
                                                {f.amx_tile, "amx_tile"},
                                                {f.amx_bf16, "amx_bf16"}};
  std::string names;
  for (const auto& [present, name] : named)
    if (present) names += names.empty() ? name : std::string(" ") + name;
  return names.empty() ? "none" : names;
}

}  // namespace gattn
