// Batched decode: sequences of different lengths decoded together, in one pass per step, give the
// logits each gives decoded alone (InferState), whatever the order and subset of slots in a step;
// and ragged passes (decoding slots' next tokens together with other slots' prompt chunks, of
// attention and of hybrid models) give each slot's logits of running alone.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/batched_infer_state.h"
#include "model/config.h"
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
std::vector<std::vector<float>> alone(const Weights& w, CacheDtype kv = CacheDtype::f32) {
  const int V = w.config().vocab_size;
  std::vector<std::vector<float>> out;
  const auto lists = token_lists();
  for (size_t s = 0; s < lists.size(); ++s) {
    InferState state(w, 40, 16, kv);
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

// Two DeltaNet layers (r = 2) and a G1-gated full-attention one.
Config tiny_hybrid() {
  const nlohmann::json j = {
      {"vocab_size", 50},
      {"hidden_size", 32},
      {"num_hidden_layers", 3},
      {"num_attention_heads", 4},
      {"num_key_value_heads", 2},
      {"head_dim", 12},
      {"intermediate_size", 48},
      {"max_position_embeddings", 40},
      {"layer_types", {"linear_attention", "linear_attention", "full_attention"}},
      {"linear_num_key_heads", 2},
      {"linear_num_value_heads", 4},
      {"linear_key_head_dim", 12},
      {"linear_value_head_dim", 10},
      {"linear_conv_kernel_dim", 4},
      {"gate", {{"position", "sdpa"}}}};
  return config_from_json(j, "tiny_hybrid");
}

// Layer 0 a mixture of experts (5 experts, top 2, a shared expert), layer 1 dense.
Config tiny_moe() {
  Config c = tiny(GatePosition::sdpa);
  c.layer_specs = {{.mlp = MlpKind::moe}, {}};
  c.num_experts = 5;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = 16;
  c.shared_expert_intermediate_size = 24;
  return c;
}

// Sequence 0 decodes while sequences 1 and 2 prefill in chunks of 3 and 5 beside it (sequence 2
// scoring every prompt token, sequence 1's chunks without logits but the last); then all three
// decode. Each pass is one forward() of ragged rows.
// With either KV cache dtype; baseline, G1, a hybrid and a mixture of experts.
TEST(BatchedInfer, MixedPassesOfDecodeAndPrefillEqualRunningAlone) {
  for (const CacheDtype kv : {CacheDtype::f32, CacheDtype::bf16})
    for (const Config& c :
         {tiny(GatePosition::none), tiny(GatePosition::sdpa), tiny_hybrid(), tiny_moe()}) {
      Weights w(c);
      w.init(17);
      const int V = c.vocab_size;
      const auto expected = alone(w, kv);
      const auto lists = token_lists();
      BatchedInferState state(w, 3, 40, 5, kv);
      std::vector<float> logits(8 * V);
      state.prefill(0, lists[0].data(), kPrompt[0], logits.data());
      int decoded[3] = {0, 0, 0}, prefilled[3] = {kPrompt[0], 0, 0};
      const int chunk[3] = {0, 3, 5};  // prompt tokens per pass (sequence 0's is prefilled)
      int passes = 0;
      while (decoded[0] + decoded[1] + decoded[2] < 3 * 8) {
        std::vector<BatchedInferState::Chunk> chunks;
        std::vector<int> seqs;
        for (int s = 0; s < 3; ++s) {
          if (prefilled[s] < kPrompt[s]) {
            const int n = std::min(chunk[s], kPrompt[s] - prefilled[s]);
            // (logits of the prompt's last chunk only; sequence 2's every_row wins)
            chunks.push_back(
                {s, lists[s].data() + prefilled[s], n, s == 2, prefilled[s] + n == kPrompt[s]});
          } else if (decoded[s] < 8) {
            chunks.push_back({s, &lists[s][kPrompt[s] + decoded[s]], 1, false});
          } else {
            continue;
          }
          seqs.push_back(s);
        }
        state.forward(chunks, logits.data());
        ++passes;
        const float* row = logits.data();
        for (size_t i = 0; i < chunks.size(); ++i) {
          const int s = seqs[i];
          const bool prompt = prefilled[s] < kPrompt[s];
          if (prompt) {
            prefilled[s] += chunks[i].count;
            const int rows = BatchedInferState::logits_rows(chunks[i]);
            if (prefilled[s] < kPrompt[s]) {
              row += int64_t(rows) * V;
              continue;
            }
            row += int64_t(rows - 1) * V;
          } else {
            ++decoded[s];
          }
          const int at = prompt ? 0 : decoded[s];  // expected[s]: the prompt's last, then each step
          EXPECT_LT(relative_l2(row, expected[s].data() + int64_t(at) * V, V), 1e-5)
              << c.num_hidden_layers << " layers, sequence " << s << " step " << at;
          row += V;
        }
        EXPECT_EQ(
            row, logits.data() + [&] {
              int64_t rows = 0;
              for (const auto& ch : chunks) rows += BatchedInferState::logits_rows(ch);
              return rows * V;
            }());
      }
      EXPECT_EQ(passes, 4 + 8);  // sequence 1: 11 prompt tokens in 4 chunks, then 8 steps
      for (int s = 0; s < 3; ++s) EXPECT_EQ(state.length(s), kPrompt[s] + 8);
    }
}

// A bf16 cache holds half the bytes, and its logits stay near the fp32 cache's (the keys and
// values rounded to 8 significant bits) without being theirs.
TEST(BatchedInfer, Bf16KeysAndValuesStayNearTheFp32Logits) {
  Weights w(tiny(GatePosition::sdpa));
  w.init(23);
  const auto f32 = alone(w), bf16 = alone(w, CacheDtype::bf16);
  for (size_t s = 0; s < f32.size(); ++s) {
    const double error = relative_l2(bf16[s].data(), f32[s].data(), int(f32[s].size()));
    EXPECT_LT(error, 2e-2) << "sequence " << s;
    EXPECT_GT(error, 0) << "sequence " << s;
  }
  EXPECT_EQ(BatchedInferState(w, 2, 40, 4, CacheDtype::bf16).decode_memory_bytes() * 2,
            BatchedInferState(w, 2, 40, 4).decode_memory_bytes());
  EXPECT_LT(BatchedInferState::planned_decode_memory_bytes(w, 2, 40, CacheDtype::bf16),
            BatchedInferState::planned_decode_memory_bytes(w, 2, 40));
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
