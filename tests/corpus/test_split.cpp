// The split: deterministic, seeded, near the asked share, the same for a key in every source.
#include <gtest/gtest.h>

#include "corpus/split.h"
#include "corpus/versification.h"

namespace gattn {
namespace {

// Counts validation keys over the KJV's 1,189 (book, chapter) keys.
int validation_chapters(uint64_t seed, double percent) {
  int n = 0;
  for (const VersifiedBook& b : kjv_versification().books())
    for (int c = 1; c <= b.chapters(); ++c) n += is_validation_chapter(seed, b.name, c, percent);
  return n;
}

TEST(Split, HashIsFixedByTheCodeAlone) {
  // Pinned values: a change here silently moves chapters between train and validation for
  // everyone, so it must be deliberate.
  EXPECT_EQ(chapter_hash(0, "Genesis", 1), 0x6EB95A1E6C995C8Full);
  EXPECT_EQ(chapter_hash(7, "Psalms", 119), 0x94C6AF217D1B8D86ull);
  EXPECT_NE(chapter_hash(0, "Genesis", 11), chapter_hash(0, "Genesis1", 1));
}

TEST(Split, ShareIsNearTheAskedPercentAndSeedsDiffer) {
  // Binomial(1189, 0.05): mean 59.5, standard deviation 7.5; [37, 82] is three deviations.
  for (uint64_t seed : {0, 1, 2, 3}) {
    const int n = validation_chapters(seed, 5);
    EXPECT_GE(n, 37) << "seed " << seed;
    EXPECT_LE(n, 82) << "seed " << seed;
  }
  EXPECT_EQ(validation_chapters(0, 0), 0);
  EXPECT_EQ(validation_chapters(0, 100), 1189);
  int differing = 0;
  for (const VersifiedBook& b : kjv_versification().books())
    for (int c = 1; c <= b.chapters(); ++c)
      differing += is_validation_chapter(0, b.name, c, 5) != is_validation_chapter(1, b.name, c, 5);
  EXPECT_GT(differing, 50);
}

TEST(Split, ValidationGrowsMonotonicallyWithThePercent) {
  // A key in validation at P% stays there at any larger P: the threshold only moves up.
  for (const VersifiedBook& b : kjv_versification().books())
    for (int c = 1; c <= b.chapters(); ++c)
      if (is_validation_chapter(0, b.name, c, 5)) {
        EXPECT_TRUE(is_validation_chapter(0, b.name, c, 10)) << b.name << " " << c;
      }
}

TEST(Split, DocumentOrderDependsOnSourceAndSeed) {
  EXPECT_NE(document_order_key(0, "kjv", "Genesis", 1), document_order_key(0, "web", "Genesis", 1));
  EXPECT_NE(document_order_key(0, "kjv", "Genesis", 1), document_order_key(1, "kjv", "Genesis", 1));
  EXPECT_EQ(document_order_key(3, "kjv", "Genesis", 1), document_order_key(3, "kjv", "Genesis", 1));
}

}  // namespace
}  // namespace gattn
