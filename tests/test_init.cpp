// Initialisation: seeded, keyed by tensor name, documented distributions.
#include <gtest/gtest.h>

#include <cmath>

#include "model/init.h"
#include "model/weights.h"

namespace gattn {
namespace {

Config small(GatePosition position) {
  Config c;
  c.vocab_size = 100;
  c.hidden_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.initializer_range = 0.02;
  c.gate.position = position;
  return c;
}

TEST(Init, AddingAGateLeavesEveryOtherTensorUnchanged) {
  Weights base(small(GatePosition::none)), gated(small(GatePosition::sdpa));
  base.init(7);
  gated.init(7);
  int compared = 0;
  for (const TensorSpec& t : base.layout().tensors()) {
    const TensorSpec* u = gated.layout().find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    for (int64_t i = 0; i < t.numel; ++i)
      ASSERT_EQ(base.values()[t.offset + i], gated.values()[u->offset + i]) << t.name;
    ++compared;
  }
  EXPECT_EQ(compared, int(base.layout().tensors().size()));
}

TEST(Init, SeedsDifferAndDistributionsAreAsDocumented) {
  Weights a(small(GatePosition::sdpa)), b(small(GatePosition::sdpa));
  a.init(1);
  b.init(2);
  EXPECT_NE(a.values(), b.values());
  for (const TensorSpec& t : a.layout().tensors()) {
    const float* x = a.data() + t.offset;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < t.numel; ++i) sum += x[i], sq += double(x[i]) * x[i];
    const double mean = sum / t.numel, std = std::sqrt(sq / t.numel - mean * mean);
    if (t.init == Init::ones) {
      EXPECT_EQ(mean, 1.0) << t.name;
      EXPECT_EQ(std, 0.0) << t.name;
    } else {
      // >= 2048 draws: the sample std within 5% of 0.02 (3 standard errors), the mean within 5
      EXPECT_NEAR(std, 0.02, 0.001) << t.name;
      EXPECT_NEAR(mean, 0.0, 5 * 0.02 / std::sqrt(double(t.numel))) << t.name;
    }
  }
}

TEST(Init, InputIndependentGateLogitsStartAtZero) {
  Config c = small(GatePosition::sdpa);
  c.gate.kind = GateKind::input_independent;
  Weights m(c);
  m.init(3);
  const TensorSpec* logit = m.layout().find("model.layers.0.self_attn.sdpa_gate.logit");
  ASSERT_NE(logit, nullptr);
  EXPECT_EQ(logit->numel, 4 * 16);
  for (int64_t i = 0; i < logit->numel; ++i) EXPECT_EQ(m.values()[logit->offset + i], 0.0f);
}

}  // namespace
}  // namespace gattn
