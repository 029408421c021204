// AdamW + schedule + clipping against torch.optim.AdamW over 10 steps from the same weights and
// gradients (tools/reference/make_optimizer_fixture.py), and the schedules' shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/layout.h"
#include "model/weights.h"
#include "train/adamw.h"
#include "train/schedule.h"

namespace gattn {
namespace {
using json = nlohmann::json;

TEST(AdamW, MatchesTorchWithScheduleAndClipping) {
  const SafetensorsReader f(std::string(GATTN_FIXTURE_DIR) +
                            "/optimizer/adamw_cosine_clip.safetensors");
  const json options = json::parse(f.metadata_value("options"));
  const json lrs = json::parse(f.metadata_value("lrs"));
  Weights weights(config_from_json(json::parse(f.metadata_value("config")), f.path()));
  const ParamLayout& layout = weights.layout();
  AdamWOptions o;
  o.beta1 = options["beta1"];
  o.beta2 = options["beta2"];
  o.eps = options["eps"];
  o.weight_decay = options["weight_decay"];
  o.no_decay = options["no_decay"].get<std::vector<std::string>>();
  Schedule schedule{
      ScheduleKind::cosine, options["lr"], options["min_lr"], options["warmup_steps"], 0,
      options["steps"]};
  AdamW adamw(layout, o);
  Gradients grads(layout);
  const float* params = weights.data();
  auto load = [&](const std::string& prefix, float* into) {
    for (const TensorSpec& t : layout.tensors()) {
      const std::vector<float> v = f.read_floats(prefix + t.name);
      std::copy(v.begin(), v.end(), into + t.offset);
    }
  };
  load("param.", weights.data());
  int clipped = 0;
  for (int step = 1; step <= int(options["steps"]); ++step) {
    EXPECT_DOUBLE_EQ(schedule.lr(step - 1), lrs[step - 1].get<double>()) << "step " << step;
    load("grad." + std::to_string(step) + ".", grads.data());
    clipped += clip_gradients(grads, global_norm(grads), options["grad_clip"]) < 1.0;
    adamw.step(weights, grads, schedule.lr(step - 1));
    std::vector<float> expected(layout.total());
    load("after." + std::to_string(step) + ".", expected.data());
    for (const TensorSpec& t : layout.tensors()) {
      double diff = 0, norm = 0;
      for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
        diff += (double(params[i]) - expected[i]) * (double(params[i]) - expected[i]);
        norm += double(expected[i]) * expected[i];
      }
      // fp32 on both sides; the rounding of a few float operations per step accumulates
      EXPECT_LT(std::sqrt(diff / norm), 1e-6) << t.name << " after step " << step;
    }
  }
  EXPECT_GT(clipped, 0);
  EXPECT_LT(clipped, int(options["steps"]));
}

TEST(AdamW, ExcludesNormsAndGateLogitsFromDecay) {
  Config c;
  c.vocab_size = 8;
  c.hidden_size = 4;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 1;
  c.head_dim = 4;
  c.intermediate_size = 4;
  c.gate.position = GatePosition::sdpa;
  c.gate.kind = GateKind::input_independent;
  const ParamLayout layout(c);
  const AdamW adamw(layout, AdamWOptions{});
  for (const TensorSpec& t : layout.tensors()) {
    const bool vector = t.shape.size() == 1;
    EXPECT_EQ(adamw.decays(t), !vector) << t.name;
  }
}

TEST(Schedule, WarmupCosineAndWarmupStableDecay) {
  const Schedule cosine{ScheduleKind::cosine, 1.0, 0.1, 10, 0, 110};
  EXPECT_DOUBLE_EQ(cosine.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(cosine.lr(9), 1.0);
  EXPECT_DOUBLE_EQ(cosine.lr(10), 1.0);
  EXPECT_NEAR(cosine.lr(60), 0.55, 1e-12);
  EXPECT_NEAR(cosine.lr(110), 0.1, 1e-12);
  const Schedule wsd{ScheduleKind::wsd, 1.0, 0.0, 10, 20, 100};
  EXPECT_DOUBLE_EQ(wsd.lr(50), 1.0);
  EXPECT_DOUBLE_EQ(wsd.lr(79), 1.0);
  EXPECT_DOUBLE_EQ(wsd.lr(90), 0.5);
  EXPECT_DOUBLE_EQ(wsd.lr(100), 0.0);
}

TEST(ClipGradients, ScalesToTheMaximumNorm) {
  Gradients g(2);
  g.data()[0] = 3, g.data()[1] = 4;
  EXPECT_DOUBLE_EQ(global_norm(g), 5.0);
  EXPECT_NEAR(clip_gradients(g, 5.0, 1.0), 1.0 / (5.0 + 1e-6), 1e-15);
  EXPECT_NEAR(global_norm(g), 1.0, 1e-6);
  Gradients small(2);
  small.data()[0] = 0.3f, small.data()[1] = 0.4f;
  EXPECT_EQ(clip_gradients(small, 0.5, 1.0), 1.0);
  EXPECT_EQ(small.data()[0], 0.3f);
}

}  // namespace
}  // namespace gattn
