// The cores the suite's thread counts need.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gattn
