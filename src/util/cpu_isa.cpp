#include "util/cpu_isa.h"

#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "util/error.h"

namespace gattn {

namespace {
constexpr const char* kVariable = "GATTN_ISA";

// Set by CMake where the x86-64 baseline and the AVX-512 kernels are compiled in.
#ifdef GATTN_X86_KERNELS
constexpr bool kX86Build = true;
#else
constexpr bool kX86Build = false;
#endif

bool has_avx512(const CpuFeatures& c) {
  return c.avx512f && c.avx512cd && c.avx512bw && c.avx512dq && c.avx512vl;
}

std::mutex g_mutex;
std::atomic<int> g_selected{-1};       // an Isa once selected
IsaChoice g_choice = IsaChoice::best;  // the choice it was selected by (under g_mutex)
}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return "portable";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

IsaChoice parse_isa_choice(std::string_view value) {
  if (value.empty() || value == "native") return IsaChoice::best;
  if (value == "avx2") return IsaChoice::avx2;
  if (value == "avx512") return IsaChoice::avx512;
  fail(kVariable, "='", value, "' is not an ISA gattn knows: expected native, avx2 or avx512 ",
       "(or unset: the best this CPU has)");
}

IsaChoice isa_choice_from_environment() {
  const char* value = std::getenv(kVariable);
  return parse_isa_choice(value ? value : "");
}

Isa resolve_isa(IsaChoice choice, const CpuFeatures& cpu) {
  const char* asked = choice == IsaChoice::avx2 ? "avx2" : "avx512";
  if (!kX86Build) {
    if (choice == IsaChoice::best) return Isa::portable;
    fail(kVariable, "=", asked, ": this build is not for x86-64 and has only portable kernels");
  }
  if (!cpu.avx2 || !cpu.fma)
    fail("this gattn is built for x86-64 CPUs with AVX2 and FMA (x86-64-v3); this CPU has: ",
         cpu_feature_names(cpu), " (rebuild with -DGATTN_NATIVE=ON for this machine only)");
  if (choice == IsaChoice::avx2) return Isa::avx2;
  if (has_avx512(cpu)) return Isa::avx512;
  if (choice == IsaChoice::best) return Isa::avx2;
  fail(kVariable, "=avx512: this CPU has no usable AVX-512 (avx512f, avx512cd, avx512bw, ",
       "avx512dq and avx512vl, with the OS saving the ZMM registers); it has: ",
       cpu_feature_names(cpu), "; use ", kVariable, "=avx2 or leave it unset");
}

Isa select_isa(IsaChoice choice) {
  const Isa isa = resolve_isa(choice, cpu_features());
  const std::lock_guard<std::mutex> lock(g_mutex);
  const int selected = g_selected.load();
  if (selected >= 0) {
    GATTN_ASSERT(selected == int(isa), "the ISA is selected once per process: it is ",
                 isa_name(Isa(selected)), ", now asked for ", isa_name(isa));
    return isa;
  }
  // oneDNN reads its cap once, at its first primitive; gattn's uses of oneDNN (ops/bf16_gemm.cpp)
  // call active_isa() before.
  if (isa == Isa::avx2 && dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2) != dnnl_success)
    GATTN_ASSERT(false,
                 "oneDNN could not be capped at avx2: it was used before the ISA was "
                 "selected");
  g_choice = choice;
  g_selected.store(int(isa));
  return isa;
}

Isa active_isa() {
  const int selected = g_selected.load(std::memory_order_acquire);
  if (selected >= 0) return Isa(selected);
  return select_isa(isa_choice_from_environment());
}

bool avx512_bf16_kernels_in_use() {
  return active_isa() == Isa::avx512 && cpu_features().avx512_bf16;
}

std::string isa_description() {
  const Isa isa = active_isa();
  IsaChoice choice;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    choice = g_choice;
  }
  std::string text = isa_name(isa);
  if (avx512_bf16_kernels_in_use()) text += " with avx512_bf16";
  if (choice == IsaChoice::best) return text + " (the best of this CPU)";
  return cat(text, " (", kVariable, "=", choice == IsaChoice::avx2 ? "avx2" : "avx512", ")");
}

}  // namespace gattn
