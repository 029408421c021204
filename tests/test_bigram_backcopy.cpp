// The Bigram-Backcopy source: its rules hold in every sampled stream, and its stated entropy is the
// loss the true source would score.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "train/bigram_backcopy.h"
#include "util/error.h"

namespace gattn {
namespace {

TEST(BigramBackcopy, TheStreamFollowsTheRules) {
  const BigramBackcopyChain chain = make_bigram_backcopy_chain({32, 3, 0.2, 7});
  ASSERT_EQ(chain.triggers.size(), 3u);
  // The triggers are the most frequent tokens of the bigram chain.
  double least_trigger = 1, most_other = 0;
  for (int t = 0; t < 32; ++t) {
    if (chain.is_trigger[t])
      least_trigger = std::min(least_trigger, chain.stationary[t]);
    else
      most_other = std::max(most_other, chain.stationary[t]);
  }
  EXPECT_GT(least_trigger, most_other);

  const BigramBackcopyStream s = sample_bigram_backcopy(chain, 20000, 1);
  ASSERT_EQ(s.tokens.size(), 20001u);
  EXPECT_EQ(s.tokens[0], 32u);  // BOS
  int copies = 0;
  double nats = 0;
  for (size_t i = 1; i < s.tokens.size(); ++i) {
    ASSERT_LT(s.tokens[i], 32u);
    if (i >= 2 && chain.is_trigger[s.tokens[i - 1]]) {
      ASSERT_FALSE(chain.is_trigger[s.tokens[i - 2]]) << "adjacent triggers at " << i;
      ASSERT_EQ(s.tokens[i], s.tokens[i - 2]) << "no copy after the trigger at " << i - 1;
      ++copies;
    } else if (i >= 2) {
      nats -= std::log(chain.transition[s.tokens[i - 1] * 32 + s.tokens[i]]);
    } else {
      ASSERT_FALSE(chain.is_trigger[s.tokens[i]]);
      nats += std::log(29.0);
    }
  }
  EXPECT_GT(copies, 1000);
  EXPECT_NEAR(s.trigger_share, copies / 20000.0, 1e-12);
  EXPECT_NEAR(s.entropy_nats, nats / 20000.0, 1e-9);

  const BigramBackcopyStream again = sample_bigram_backcopy(chain, 20000, 1);
  EXPECT_EQ(again.tokens, s.tokens);
  EXPECT_NE(sample_bigram_backcopy(chain, 20000, 2).tokens, s.tokens);
}

TEST(BigramBackcopy, RejectsBadSpecs) {
  EXPECT_THROW(make_bigram_backcopy_chain({2, 1, 0.1, 0}), Error);
  EXPECT_THROW(make_bigram_backcopy_chain({16, 9, 0.1, 0}), Error);
  EXPECT_THROW(make_bigram_backcopy_chain({16, 3, 0.0, 0}), Error);
}

}  // namespace
}  // namespace gattn
