// Batched decode: sequences of different lengths decoded together, in one pass per step, give the
// logits each gives decoded alone (InferState), whatever the order and subset of slots in a step.
#include <gtest/gtest.h>

#include <cmath>

#include "model/batched_infer_state.h"
#include "model/infer_state.h"
#include "util/error.h"

namespace gattn {
namespace {

Config tiny(GatePosition gate) {
  Config c;
  c.vocab_size = 50;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 12;
  c.intermediate_size = 48;
  c.max_position_embeddings = 40;
  c.gate.position = gate;
  return c;
}

double relative_l2(const float* a, const float* b, int n) {
  double diff = 0, norm = 0;
  for (int i = 0; i < n; ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// Each sequence's tokens: a prompt of its own length, then the decoded tokens.
std::vector<std::vector<int32_t>> token_lists() {
  std::vector<std::vector<int32_t>> lists;
  for (int prompt : {5, 11, 1}) {
    std::vector<int32_t> ids;
    for (int i = 0; i < prompt + 12; ++i) ids.push_back((7 * i + 3 * prompt + 1) % 50);
    lists.push_back(ids);
  }
  return lists;
}
constexpr int kPrompt[] = {5, 11, 1};

// Logits after every token from the prompt's last on, each sequence alone.
std::vector<std::vector<float>> alone(const Weights& w) {
  const int V = w.config().vocab_size;
  std::vector<std::vector<float>> out;
  const auto lists = token_lists();
  for (size_t s = 0; s < lists.size(); ++s) {
    InferState state(w, 40, 16);
    std::vector<float> logits(V), all;
    state.forward_last(lists[s].data(), kPrompt[s], logits.data());
    all.insert(all.end(), logits.begin(), logits.end());
    for (size_t i = kPrompt[s]; i < lists[s].size(); ++i) {
      state.forward_last(&lists[s][i], 1, logits.data());
      all.insert(all.end(), logits.begin(), logits.end());
    }
    out.push_back(all);
  }
  return out;
}

TEST(BatchedInfer, DecodingTogetherEqualsDecodingAlone) {
  for (GatePosition gate : {GatePosition::none, GatePosition::sdpa, GatePosition::value,
                            GatePosition::key, GatePosition::dense}) {
    Weights w(tiny(gate));
    w.init(31);
    const int V = w.config().vocab_size;
    const auto expected = alone(w);
    const auto lists = token_lists();
    BatchedInferState state(w, 4, 40, 4);  // slot 3 stays empty; prompts take several chunks
    const int slot_of[] = {2, 0, 1};
    std::vector<float> logits(4 * V);
    for (int s = 0; s < 3; ++s) {
      for (int done = 0; done < kPrompt[s]; done += 4) {
        const int n = std::min(4, kPrompt[s] - done);
        state.prefill(slot_of[s], lists[s].data() + done, n, logits.data());
      }
      EXPECT_LT(relative_l2(logits.data(), expected[s].data(), V), 1e-5) << "prefill " << s;
    }
    std::vector<int> step(3, 0);  // tokens decoded per sequence
    // Steps over changing subsets and orders: all three, then pairs, then all again.
    const std::vector<std::vector<int>> schedule = {{0, 1, 2}, {2, 0},    {1},       {1, 2, 0},
                                                    {0, 2},    {2, 1, 0}, {0, 1, 2}, {1, 0},
                                                    {2, 1},    {0, 1, 2}, {0, 1, 2}};
    for (const auto& seqs : schedule) {
      std::vector<int> slots;
      std::vector<int32_t> ids;
      for (int s : seqs) {
        slots.push_back(slot_of[s]);
        ids.push_back(lists[s][kPrompt[s] + step[s]]);
      }
      state.decode(slots, ids, logits.data());
      for (size_t i = 0; i < seqs.size(); ++i) {
        const int s = seqs[i];
        ++step[s];
        EXPECT_LT(relative_l2(logits.data() + i * V, expected[s].data() + step[s] * V, V), 1e-5)
            << "gate " << int(gate) << " sequence " << s << " step " << step[s];
        EXPECT_EQ(state.length(slot_of[s]), kPrompt[s] + step[s]);
      }
    }
    EXPECT_EQ(state.length(3), 0);
  }
}

TEST(BatchedInfer, RejectsBadSlotsAndFullCaches) {
  Weights w(tiny(GatePosition::none));
  BatchedInferState state(w, 2, 8, 8);
  std::vector<float> logits(2 * 50);
  const std::vector<int32_t> ids(8, 3);
  state.prefill(0, ids.data(), 8, nullptr);
  EXPECT_THROW(state.decode(std::vector<int>{0}, std::vector<int32_t>{1}, logits.data()), Error);
  EXPECT_THROW(state.decode(std::vector<int>{1, 1}, std::vector<int32_t>{1, 2}, logits.data()),
               Error);
  EXPECT_THROW(state.decode(std::vector<int>{2}, std::vector<int32_t>{1}, logits.data()), Error);
  EXPECT_THROW(state.prefill(1, ids.data(), 9, nullptr), Error);
  state.reset(0);
  EXPECT_NO_THROW(state.decode(std::vector<int>{0, 1}, std::vector<int32_t>{1, 2}, logits.data()));
  EXPECT_THROW(BatchedInferState(w, 0, 8, 8), Error);
  EXPECT_THROW(BatchedInferState(w, 1, 41, 8), Error);
}

}  // namespace
}  // namespace gattn
