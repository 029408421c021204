// The cores the suite's thread counts need.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "util/threads.h"

namespace gattn {
namespace {

// The most threads a test asks for (the golden fixtures and bitwise resume at 2 threads). With
// fewer cores set_num_threads clamps, and those tests would pass without running what they claim.
constexpr int kMostTestThreads = 2;

TEST(Threads, TheMachineHasTheCoresTheTestsAskFor) {
  ASSERT_GE(available_cores(), kMostTestThreads)
      << "this process may use " << available_cores() << " core(s); the suite's "
      << kMostTestThreads << "-thread tests need " << kMostTestThreads
      << " (run it on a machine or cpuset with more)";
  const ThreadScope scope(kMostTestThreads);
  EXPECT_EQ(num_threads(), kMostTestThreads);
}

TEST(Threads, AGenericBlasCoreIsReplacedByTheOneTheCpuRuns) {
  CpuFeatures avx512, avx2, sse;
  avx512.avx512f = avx512.avx512bw = avx512.avx512dq = avx512.avx512vl = true;
  avx512.avx2 = avx512.fma = avx2.avx2 = avx2.fma = true;
  EXPECT_EQ(blas_core_for("Prescott", avx512), "SkylakeX");  // Debian 12's on an Emerald Rapids
  EXPECT_EQ(blas_core_for("Sandybridge", avx2), "Haswell");
  EXPECT_EQ(blas_core_for("Prescott", sse), "");    // nothing better to run
  EXPECT_EQ(blas_core_for("Haswell", avx512), "");  // OpenBLAS's own choice of a modern core
  EXPECT_EQ(blas_core_for("Zen", avx2), "");
}

// The gattn binary as OpenBLAS reports it (OPENBLAS_VERBOSE=2 prints the core as it loads): the
// core it computes with is the one the rule picks where OpenBLAS fell back to a generic one.
TEST(Threads, TheCliComputesWithTheBlasCoreTheCpuRuns) {
  FILE* pipe = ::popen(
      ("env -u OPENBLAS_CORETYPE OPENBLAS_VERBOSE=2 " + std::string(GATTN_BINARY) + " --help 2>&1")
          .c_str(),
      "r");
  ASSERT_TRUE(pipe);
  std::string first, last;
  for (char line[512]; std::fgets(line, sizeof line, pipe);) {
    std::string text(line);
    if (!text.starts_with("Core: ")) continue;
    text = text.substr(6, text.find_first_of("\r\n") - 6);
    if (first.empty()) first = text;
    last = text;
  }
  ::pclose(pipe);
  ASSERT_FALSE(first.empty()) << "OpenBLAS printed no core";
  const std::string better = blas_core_for(first, cpu_features());
  EXPECT_EQ(last, better.empty() ? first : better) << "OpenBLAS chose " << first;
}

}  // namespace
}  // namespace gattn
