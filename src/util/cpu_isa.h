// Which of gattn's kernels run: chosen once per process, the best this CPU has unless GATTN_ISA
// asks for less (docs/CPU_DISPATCH.md).
// - avx2: the baseline every x86-64 build is compiled for (x86-64-v3: AVX2, FMA); oneDNN is capped
//   at AVX2 too, so the process computes as on a CPU without AVX-512.
// - avx512: also the AVX-512 kernels (ops/avx512_kernels.h: the bf16 ones where the CPU has
//   avx512_bf16), and oneDNN at its best (AMX where present).
// - portable: a build for another architecture (plain C++ only).
// GATTN_ISA: unset, empty or "native" = the best; "avx2"; "avx512" (an error on a CPU without it).
#pragma once
#include <string>
#include <string_view>

#include "util/cpu_features.h"

namespace gattn {

enum class Isa { portable, avx2, avx512 };
enum class IsaChoice { best, avx2, avx512 };

const char* isa_name(Isa isa);

// GATTN_ISA's value as a choice; anything else is an Error naming the variable and the value.
IsaChoice parse_isa_choice(std::string_view value);
// The choice in the environment's GATTN_ISA (unset: best).
IsaChoice isa_choice_from_environment();

// The ISA a choice gives on a CPU with these features (in this build); an Error naming GATTN_ISA
// when the CPU cannot run it, or cannot run this build at all (an x86-64 build needs AVX2 + FMA).
Isa resolve_isa(IsaChoice choice, const CpuFeatures& cpu);

// Sets the process's ISA (resolve_isa on this CPU), capping oneDNN for avx2: call before the
// first oneDNN primitive, once, at start-up (the CLI's main does). A later call must resolve to
// the same ISA (an InternalError otherwise).
Isa select_isa(IsaChoice choice);

// The ISA in use: selected by select_isa, or on this first call from GATTN_ISA.
Isa active_isa();
// Whether the AVX-512 BF16 kernels run (ISA avx512 on a CPU with avx512_bf16).
bool avx512_bf16_kernels_in_use();

// "avx512 (GATTN_ISA unset: the best of this CPU)", "avx2 (GATTN_ISA=avx2)": for benchmarks.
std::string isa_description();

}  // namespace gattn
