// Parameter counts from the config alone (configs/paper/), against the paper's added-parameter
// column and the dense 1.7B model.
#include <gtest/gtest.h>

#include "io/checkpoint.h"
#include "model/arena.h"
#include "model/flops.h"
#include "model/layout.h"

namespace gattn {
namespace {

const std::string kPaper = std::string(GATTN_CONFIG_DIR) + "/paper/";

int64_t count(const std::string& config, const std::string& gate = "") {
  return ParamLayout(load_config(kPaper + config, gate)).total();
}

// The paper's MoE 15A2B attention shape (24 layers, hidden 2048, 32 q / 4 kv heads of 128; the
// experts are not modelled, so only the gate's additions are compared).
int64_t added_15a2b(const std::string& gate) {
  return count("15a2b_attention.json", gate) - count("15a2b_attention.json");
}

TEST(ParamCount, ReproducesThePapersAddedParameters) {
  EXPECT_EQ(added_15a2b(R"({"position": "sdpa"})"), 201'326'592);   // 201.3M
  EXPECT_EQ(added_15a2b(R"({"position": "value"})"), 25'165'824);   // 25.2M
  EXPECT_EQ(added_15a2b(R"({"position": "key"})"), 25'165'824);     // 25.2M
  EXPECT_EQ(added_15a2b(R"({"position": "query"})"), 201'326'592);  // 201.3M
  EXPECT_EQ(added_15a2b(R"({"position": "dense"})"), 100'663'296);  // 100.7M
  EXPECT_EQ(added_15a2b(R"({"position": "sdpa", "granularity": "headwise"})"), 1'572'864);  // 1.57M
  EXPECT_EQ(added_15a2b(R"({"position": "value", "granularity": "headwise"})"), 196'608);   // 0.20M
}

// The paper's 15A2B with its experts (128 of width 768, top 8, no shared expert): 15.58 B
// parameters, 1.68 B of them run per token, 1.99 B with the input embedding.
TEST(ParamCount, The15A2BMixtureOfExperts) {
  const Config c = load_config(kPaper + "15a2b.json");
  EXPECT_EQ(ParamLayout(c).total(), 15'577'227'264);
  EXPECT_EQ(active_parameters(c), 1'676'517'376);
  EXPECT_EQ(active_parameters(c) + int64_t(c.vocab_size) * c.hidden_size, 1'987'682'304);
  EXPECT_EQ(idle_expert_parameters(c), int64_t(24) * 120 * 3 * 768 * 2048);
  // The attention shape alone (15a2b_attention.json) adds the same gate parameters.
  EXPECT_EQ(ParamLayout(load_config(kPaper + "15a2b.json", R"({"position": "sdpa"})")).total() -
                ParamLayout(c).total(),
            201'326'592);
}

// Qwen3.5-35B-A3B's language model (configs/paper/qwen3_5_35b_a3b.json: 40 layers, 30 Gated
// DeltaNet 16/32 x 128 and 10 G1 attention 16q/2kv x 256, hidden 2048, 256 experts top-8 of 512
// and a shared expert of 512, vocabulary 248,320 untied): llama.cpp counts it 34.66 B
// (../shared/research/hybrid-moe-dp.md, C.2); about 3 B active.
TEST(ParamCount, Qwen35_35B_A3B) {
  const Config c = load_config(kPaper + "qwen3_5_35b_a3b.json");
  const int64_t total = ParamLayout(c).total();
  EXPECT_EQ(total, 34'660'610'688);
  EXPECT_EQ((total + 5'000'000) / 10'000'000, 3'466);  // 34.66 B, as llama.cpp prints it
  EXPECT_EQ(active_parameters(c), 2'946'429'568);
  EXPECT_EQ(idle_expert_parameters(c), int64_t(40) * 248 * 3 * 512 * 2048);
}

TEST(ParamCount, Dense1p7B) {
  EXPECT_EQ(count("dense_1.7b.json"), 1'720'574'976);
  EXPECT_EQ(count("dense_1.7b.json", R"({"position": "sdpa"})"), 1'720'574'976 + 117'440'512);
  EXPECT_EQ(count("dense_1.7b.json", R"({"position": "sdpa", "granularity": "headwise"})"),
            1'720'574'976 + 917'504);
}

TEST(ParamLayout, FusedProjectionsAreContiguous) {
  Config c;
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 2;
  c.intermediate_size = 6;
  c.gate.position = GatePosition::key;
  const ParamLayout layout(c);
  const std::string p = "model.layers.1.";
  const int64_t q = layout.find(p + "self_attn.q_proj.weight")->offset;
  EXPECT_EQ(q, layout.layers[1].attention.proj);
  EXPECT_EQ(layout.find(p + "self_attn.k_proj.weight")->offset, q + 8 * 8);
  EXPECT_EQ(layout.find(p + "self_attn.v_proj.weight")->offset, q + 8 * 8 + 4 * 8);
  EXPECT_EQ(layout.find(p + "self_attn.key_gate.weight")->offset, q + 8 * 8 + 2 * 4 * 8);
  EXPECT_EQ(layer_configs(c)[1].attention.projection_rows(), 8 + 4 + 4 + 4);
  EXPECT_EQ(layout.find(p + "mlp.up_proj.weight")->offset, layout.layers[1].mlp.gate_up + 6 * 8);
  EXPECT_EQ(layout.find("lm_head.weight")->numel, 80);
}

// PaLM's count for gattn bench: 6 x (parameters that are GEMM weights) + 6 L H d T per token.
// A shared region: every user's tensors start where the region starts, the region is as large
// as the largest user, and a list of tensors two users plan alike is listed once.
TEST(Arena, SharedRegionsOverlayTheirUsers) {
  Arena arena;
  float *before = nullptr, *a1 = nullptr, *a2 = nullptr, *b1 = nullptr, *c1 = nullptr,
        *c2 = nullptr, *after = nullptr;
  arena.plan(&before, 16, "before");
  arena.begin_shared();
  arena.next_sharer();
  arena.plan(&a1, 16, "x");
  arena.plan(&a2, 100, "y");
  arena.next_sharer();
  arena.plan(&b1, 300, "z");
  arena.next_sharer();
  arena.plan(&c1, 16, "x");
  arena.plan(&c2, 100, "y");
  arena.end_shared();
  arena.plan(&after, 16, "after");
  arena.allocate();
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a1, c1);
  EXPECT_EQ(a2, c2);
  EXPECT_EQ(a1, before + 16);
  EXPECT_EQ(after, a1 + 304);  // the largest user, 300 floats rounded up to 64 bytes
  EXPECT_EQ(arena.bytes(), int64_t(sizeof(float)) * (16 + 304 + 16));
  std::vector<std::string> names;
  for (const Arena::Entry& e : arena.entries()) names.push_back(e.name + (e.shared ? "*" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{"before", "x*", "y*", "z*", "after"}));
}

TEST(Flops, TrainingStepCountsWeightsOnceAndCausalAttention) {
  Config c = load_config(std::string(GATTN_CONFIG_DIR) + "/default.json");  // tied, 2,508,992
  const double attention = 6.0 * 4 * 3 * 64 * 256;
  EXPECT_EQ(training_flops_per_token(c, 256), 6.0 * 2508992 + attention);
  // Untied: one more [4096, 192] matrix (the LM head), but the embedding lookup is no GEMM.
  c.tie_word_embeddings = false;
  EXPECT_EQ(ParamLayout(c).total(), 2508992 + 4096 * 192);
  EXPECT_EQ(training_flops_per_token(c, 256), 6.0 * 2508992 + attention);
  EXPECT_EQ(training_flops_per_token(c, 512) - training_flops_per_token(c, 256), attention);
}

}  // namespace
}  // namespace gattn
