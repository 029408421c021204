// Parameter counts from the config alone, against the paper's added-parameter column and the
// dense 1.7B model.
#include <gtest/gtest.h>

#include "model/layout.h"

namespace gattn {
namespace {

// The paper's MoE 15A2B attention shape (the experts are not modelled; only the gate's
// additions are compared): 24 layers, hidden 2048, 32 q / 4 kv heads of 128.
Config moe_15a2b_attention(GatePosition position, bool headwise) {
  Config c;
  c.vocab_size = 151936;
  c.hidden_size = 2048;
  c.num_hidden_layers = 24;
  c.num_attention_heads = 32;
  c.num_key_value_heads = 4;
  c.head_dim = 128;
  c.intermediate_size = 768;
  c.gate.position = position;
  c.gate.headwise = headwise;
  return c;
}

int64_t added(GatePosition position, bool headwise) {
  return ParamLayout(moe_15a2b_attention(position, headwise)).total() -
         ParamLayout(moe_15a2b_attention(GatePosition::none, false)).total();
}

TEST(ParamCount, ReproducesThePapersAddedParameters) {
  EXPECT_EQ(added(GatePosition::sdpa, false), 201'326'592);   // 201.3M
  EXPECT_EQ(added(GatePosition::value, false), 25'165'824);   // 25.2M
  EXPECT_EQ(added(GatePosition::key, false), 25'165'824);     // 25.2M
  EXPECT_EQ(added(GatePosition::query, false), 201'326'592);  // 201.3M
  EXPECT_EQ(added(GatePosition::dense, false), 100'663'296);  // 100.7M
  EXPECT_EQ(added(GatePosition::sdpa, true), 1'572'864);      // 1.57M
  EXPECT_EQ(added(GatePosition::value, true), 196'608);       // 0.20M
}

TEST(ParamCount, Dense1p7B) {
  Config c;
  c.vocab_size = 151936;
  c.hidden_size = 2048;
  c.num_hidden_layers = 28;
  c.num_attention_heads = 16;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  c.intermediate_size = 6144;
  c.tie_word_embeddings = true;
  c.use_qk_norm = true;
  EXPECT_EQ(ParamLayout(c).total(), 1'720'574'976);
  c.gate.position = GatePosition::sdpa;
  EXPECT_EQ(ParamLayout(c).total(), 1'720'574'976 + 117'440'512);
  c.gate.headwise = true;
  EXPECT_EQ(ParamLayout(c).total(), 1'720'574'976 + 917'504);
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
  EXPECT_EQ(q, layout.layers[1].attn_proj);
  EXPECT_EQ(layout.find(p + "self_attn.k_proj.weight")->offset, q + 8 * 8);
  EXPECT_EQ(layout.find(p + "self_attn.v_proj.weight")->offset, q + 8 * 8 + 4 * 8);
  EXPECT_EQ(layout.find(p + "self_attn.key_gate.weight")->offset, q + 8 * 8 + 2 * 4 * 8);
  EXPECT_EQ(layout.attn_proj_rows, 8 + 4 + 4 + 4);
  EXPECT_EQ(layout.find(p + "mlp.up_proj.weight")->offset, layout.layers[1].mlp_gate_up + 6 * 8);
  EXPECT_EQ(layout.find("lm_head.weight")->numel, 80);
}

}  // namespace
}  // namespace gattn
