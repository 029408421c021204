// The gradients' reduction overlapped with the backward pass (issue 36;
// train/backward_reduction.h): the pass hands over each range once, only once nothing more is
// added there, the embedding's rows of the late ids last, and the folded gradient has the bits of
// folding after the pass. Ranks over MPI: tests/cli/data_parallel.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "model/config.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "train/backward_reduction.h"
#include "train/gradient_tree.h"
#include "util/threads.h"

namespace gattn {
namespace {

// Holds what the pass hands over: each value as it was then, and the order of the ranges.
class RecordingReduction final : public OverlappedReduction {
 public:
  explicit RecordingReduction(const Gradients& grads)
      : grads_(grads), seen_(size_t(grads.size()), 0.0f), times_(size_t(grads.size()), 0) {}
  void ready(const std::vector<ShardRange>& ranges) override {
    ASSERT_FALSE(finished_) << "a range after finish()";
    ASSERT_FALSE(ranges.empty());
    for (size_t i = 0; i < ranges.size(); ++i) {
      const auto [begin, end] = ranges[i];
      ASSERT_TRUE(0 <= begin && begin < end && end <= grads_.size()) << begin << " " << end;
      ASSERT_TRUE(i == 0 || ranges[i - 1].end <= begin) << "ranges not sorted";
      std::copy(grads_.data() + begin, grads_.data() + end, seen_.begin() + begin);
      for (int64_t v = begin; v < end; ++v) ++times_[size_t(v)];
      ranges_.push_back({begin, end});
    }
  }
  void finish() override { finished_ = true; }

  const Gradients& grads_;
  std::vector<float> seen_;
  std::vector<int> times_;
  std::vector<ShardRange> ranges_;
  bool finished_ = false;
};

Config small_config(bool tied, bool moe) {
  Config c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  c.gate.position = GatePosition::sdpa;
  if (moe) {
    c.layer_specs = {{.mlp = MlpKind::moe}, {}};
    c.num_experts = 4;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 16;
  }
  return c;
}

// Two micro-batches of 2 x 8 tokens folded by the tree: the second handed over during its pass.
// `late` ids: the second micro-batch's and those of another rank's (ids it does not have).
void check_overlapped_fold(const Config& config) {
  const ThreadScope threads(1);
  Weights w(config);
  w.init(5);
  std::mt19937_64 rng(9);
  std::vector<int32_t> ids(32), targets(32);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = int32_t(rng() % 20), targets[i] = int32_t(rng() % 40);  // ids < 20: rows 20.. unread
  auto micro_batch = [&](int m) {
    return Batch{ids.data() + m * 16, targets.data() + m * 16, 2, 8};
  };

  TrainState reference(w);  // folded after the pass
  GradientTree reference_tree(reference.grads());
  for (int m = 0; m < 2; ++m) {
    reference.forward_backward(micro_batch(m), 0.03f);
    reference_tree.add(m == 1);
  }

  TrainState state(w);
  Gradients& grads = state.grads();
  GradientTree tree(grads);
  state.forward_backward(micro_batch(0), 0.03f);
  tree.add(false);
  std::vector<int32_t> late(ids.begin() + 16, ids.end());
  late.insert(late.end(), {21, 33});  // another rank's last micro-batch
  std::sort(late.begin(), late.end());
  late.erase(std::unique(late.begin(), late.end()), late.end());
  RecordingReduction reduction(grads);
  BackwardReduction backward(w.layout(), config.vocab_size, config.hidden_size, late, tree, grads,
                             reduction);
  state.set_gradient_ready(&backward);
  state.forward_backward(micro_batch(1), 0.03f);
  state.set_gradient_ready(nullptr);
  const size_t before_finish = reduction.ranges_.size();
  backward.finish();
  ASSERT_TRUE(reduction.finished_);

  EXPECT_TRUE(std::all_of(reduction.times_.begin(), reduction.times_.end(), [](int n) {
    return n == 1;
  })) << "every value handed over once";
  const int64_t total = grads.size();
  EXPECT_EQ(std::memcmp(grads.data(), reference.grads().data(), size_t(total) * 4), 0)
      << "the bits of folding after the pass";
  EXPECT_EQ(std::memcmp(reduction.seen_.data(), grads.data(), size_t(total) * 4), 0)
      << "a value changed after it was handed over";
  // The late rows, and nothing else, go after the pass (in finish()).
  const int64_t embed = w.layout().embed, C = config.hidden_size;
  std::vector<int> late_count(size_t(total), 0);
  for (size_t r = before_finish; r < reduction.ranges_.size(); ++r)
    for (int64_t i = reduction.ranges_[r].begin; i < reduction.ranges_[r].end; ++i)
      ++late_count[size_t(i)];
  for (int64_t i = 0; i < total; ++i) {
    const bool in_late_row = i >= embed && i < embed + config.vocab_size * C &&
                             std::binary_search(late.begin(), late.end(), int32_t((i - embed) / C));
    ASSERT_EQ(late_count[size_t(i)], in_late_row ? 1 : 0) << "value " << i;
  }
}

TEST(BackwardReduction, TiedEmbeddingHandsOverEachValueOnceWithFoldingsBits) {
  check_overlapped_fold(small_config(true, false));
}
TEST(BackwardReduction, UntiedLmHeadHandsOverEachValueOnceWithFoldingsBits) {
  check_overlapped_fold(small_config(false, false));
}
TEST(BackwardReduction, MixtureOfExpertsHandsOverEachValueOnceWithFoldingsBits) {
  check_overlapped_fold(small_config(true, true));
}

TEST(BackwardReduction, LastMicroBatchIdsAreEachRanksLastSortedAndUnique) {
  // 4 micro-batches of 3 ids over 2 ranks: rank 0's last is micro-batch 1, rank 1's is 3.
  const std::vector<int32_t> ids = {9, 9, 9, 5, 1, 5, 9, 9, 9, 7, 2, 7};
  EXPECT_EQ(last_micro_batch_ids(ids.data(), 3, 4, 2), (std::vector<int32_t>{1, 2, 5, 7}));
  EXPECT_EQ(last_micro_batch_ids(ids.data(), 3, 4, 1), (std::vector<int32_t>{2, 7}));
}

TEST(GradientTree, AddLastARangeAtATimeGivesAddsBits) {
  for (int count : {1, 2, 3, 4, 5}) {
    std::mt19937 rng(static_cast<uint32_t>(count));
    std::normal_distribution<float> normal(0.0f, 1e4f);
    std::vector<std::vector<float>> parts(size_t(count), std::vector<float>(100));
    for (auto& part : parts)
      for (float& v : part) v = normal(rng) * (rng() % 2 ? 1e-4f : 1.0f);
    Gradients whole(100), ranged(100);
    GradientTree whole_tree(whole), ranged_tree(ranged);
    for (int m = 0; m < count; ++m) {
      std::copy(parts[size_t(m)].begin(), parts[size_t(m)].end(), whole.data());
      std::copy(parts[size_t(m)].begin(), parts[size_t(m)].end(), ranged.data());
      whole_tree.add(m + 1 == count);
      if (m + 1 < count) ranged_tree.add(false);
    }
    for (auto [b, e] : {std::pair{60, 100}, {0, 13}, {13, 60}}) ranged_tree.add_last(b, e);
    ranged_tree.end_last();
    EXPECT_EQ(std::memcmp(whole.data(), ranged.data(), 400), 0) << count << " micro-batches";
  }
}

}  // namespace
}  // namespace gattn
