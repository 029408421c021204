// The run-time choice of kernels (util/cpu_isa.h): GATTN_ISA's values, the ISA each choice gives
// on CPUs with and without AVX-512, and the choice the process (and a gattn it starts) runs. The
// AVX-512 kernels against their scalar model: Bf16.TileKernelScalarModelGivesTheKernelsBits and
// Bf16.ConversionRoundsLikeRoundToBf16 (test_bf16.cpp).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "ops/bf16_gemm.h"
#include "ops/bf16_tile.h"
#include "ops/matmul.h"
#include "util/cpu_isa.h"
#include "util/error.h"

namespace gattn {
namespace {

// The message of the Error that work throws ("" if none).
template <typename Work>
std::string error_of(Work work) {
  try {
    work();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CpuIsa, ReadsTheValuesOfGattnIsa) {
  EXPECT_EQ(parse_isa_choice(""), IsaChoice::best);
  EXPECT_EQ(parse_isa_choice("native"), IsaChoice::best);
  EXPECT_EQ(parse_isa_choice("avx2"), IsaChoice::avx2);
  EXPECT_EQ(parse_isa_choice("avx512"), IsaChoice::avx512);
}

TEST(CpuIsa, AnUnknownValueIsAnErrorNamingTheVariableAndTheValue) {
  for (const std::string value : {"avx3", "AVX2", " avx2", "avx512_bf16", "sse4.1"}) {
    const std::string message = error_of([&] { parse_isa_choice(value); });
    EXPECT_NE(message.find("GATTN_ISA='" + value + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("expected native, avx2 or avx512"), std::string::npos) << message;
  }
}

#ifdef __x86_64__
CpuFeatures avx2_cpu() {
  CpuFeatures c;
  c.avx2 = c.fma = true;
  return c;
}
CpuFeatures avx512_cpu(bool bf16) {
  CpuFeatures c = avx2_cpu();
  c.avx512f = c.avx512cd = c.avx512bw = c.avx512dq = c.avx512vl = true;
  c.avx512_bf16 = c.avx512_vnni = bf16;
  return c;
}

TEST(CpuIsa, EachChoiceGivesItsIsaOnEachCpu) {
  for (const bool bf16 : {false, true}) {
    EXPECT_EQ(resolve_isa(IsaChoice::best, avx512_cpu(bf16)), Isa::avx512);
    EXPECT_EQ(resolve_isa(IsaChoice::avx512, avx512_cpu(bf16)), Isa::avx512);
    EXPECT_EQ(resolve_isa(IsaChoice::avx2, avx512_cpu(bf16)), Isa::avx2);
  }
  EXPECT_EQ(resolve_isa(IsaChoice::best, avx2_cpu()), Isa::avx2);
  EXPECT_EQ(resolve_isa(IsaChoice::avx2, avx2_cpu()), Isa::avx2);
  // AVX-512 without VL (or with the OS not saving ZMM: detection clears them all) is not enough.
  CpuFeatures partial = avx512_cpu(true);
  partial.avx512vl = false;
  EXPECT_EQ(resolve_isa(IsaChoice::best, partial), Isa::avx2);
  const std::string message = error_of([&] { resolve_isa(IsaChoice::avx512, avx2_cpu()); });
  EXPECT_NE(message.find("GATTN_ISA=avx512: this CPU has no usable AVX-512"), std::string::npos)
      << message;
  EXPECT_NE(message.find("it has: avx2 fma;"), std::string::npos) << message;
  // Without AVX2 the build itself cannot run: said for every choice, before any kernel runs.
  CpuFeatures old = avx2_cpu();
  old.avx2 = false;
  for (const IsaChoice choice : {IsaChoice::best, IsaChoice::avx2, IsaChoice::avx512})
    EXPECT_NE(error_of([&] { resolve_isa(choice, old); }).find("AVX2 and FMA (x86-64-v3)"),
              std::string::npos);
}
#endif

// Run under GATTN_ISA unset (ctest's unit.*) and GATTN_ISA=avx2 (unit.*.under_isa_avx2).
TEST(CpuIsa, TheProcessRunsTheEnvironmentsChoice) {
  const Isa isa = active_isa();
  EXPECT_EQ(isa, resolve_isa(isa_choice_from_environment(), cpu_features()));
  const bool bf16_kernels = isa == Isa::avx512 && cpu_features().avx512_bf16;
  EXPECT_EQ(avx512_bf16_kernels_in_use(), bf16_kernels);
  EXPECT_EQ(bf16_tiles_available(), bf16_kernels);
  EXPECT_EQ(native_bf16_gemm_available(), bf16_kernels);
  if (isa == Isa::avx2) {  // oneDNN capped too: the process computes as on an AVX2-only CPU
    EXPECT_EQ(onednn_isa_name(), "avx2");
    if (cpu_features().avx512_bf16) {
      const std::string message = error_of([] { check_gemm_precision(GemmPrecision::bf16); });
      EXPECT_NE(message.find("the ISA in use is avx2 (GATTN_ISA=avx2)"), std::string::npos)
          << message;
    }
  }
  if (isa == Isa::avx512) {
    EXPECT_EQ(onednn_isa_name().rfind("avx512", 0), 0u) << onednn_isa_name();
  }
}

TEST(CpuIsa, TheIsaIsSelectedOncePerProcess) {
  const Isa isa = active_isa();
  EXPECT_EQ(select_isa(isa_choice_from_environment()), isa);  // the same choice again: fine
  if (resolve_isa(IsaChoice::best, cpu_features()) == Isa::avx512) {
    const IsaChoice other = isa == Isa::avx2 ? IsaChoice::avx512 : IsaChoice::avx2;
    EXPECT_THROW(select_isa(other), InternalError);
    EXPECT_EQ(active_isa(), isa);
  }
}

struct Outcome {
  int exit_code;
  std::string output;  // stdout and stderr
};

Outcome run_shell(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

// The binary reads GATTN_ISA at start-up: avx2 is the AVX2 path everywhere (gattn bench says so,
// oneDNN included, and native bf16 is refused naming it); an unknown value is exit 1 naming it.
TEST(CpuIsa, GattnRunsTheAvx2PathUnderGattnIsaAvx2) {
  const std::string gattn = GATTN_BINARY, config = std::string(GATTN_CONFIG_DIR) + "/default.json";
  const std::string bench = gattn + " bench --config " + config +
                            " --batch 1 --seq 8 --steps 1 --warmup 0 --no-peak --train-only";
  Outcome o = run_shell("GATTN_ISA=avx2 " + bench);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("ISA avx2 (GATTN_ISA=avx2), oneDNN avx2,"), std::string::npos)
      << o.output;
  if (cpu_features().avx512_bf16) {
    o = run_shell("GATTN_ISA=avx2 " + bench + " --precision bf16");
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_NE(o.output.find("the ISA in use is avx2 (GATTN_ISA=avx2)"), std::string::npos)
        << o.output;
  }
  o = run_shell("GATTN_ISA=avx3 " + gattn + " params --config " + config);
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("gattn: error: GATTN_ISA='avx3' is not an ISA gattn knows"),
            std::string::npos)
      << o.output;
}

}  // namespace
}  // namespace gattn
