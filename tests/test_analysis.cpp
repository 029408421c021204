// The analysis against direct computations: first-token attention from the saved log-sum-exp
// equals the softmax of the scores; uniform attention gives the uniform value; a zero gate gives
// scores of exactly 0.5; M-Act is the largest |hidden state|.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "analysis/analyze.h"
#include "analysis/layer_views.h"
#include "io/token_shard.h"
#include "model/train_state.h"
#include "train/loader.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

class Analysis : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("gattn_analysis_" + std::to_string(::getpid()) + ".bin"))
                .string();
    std::mt19937_64 rng(5);
    std::vector<uint32_t> tokens;
    std::vector<uint64_t> starts;
    for (int doc = 0; doc < 20; ++doc) {
      starts.push_back(tokens.size());
      tokens.push_back(0);
      for (int i = 0; i < 50; ++i) tokens.push_back(1 + uint32_t(rng() % 63));
    }
    write_token_shard(path_, tokens, starts, 64, 0, tokens.size());
    config_.vocab_size = 64;
    config_.hidden_size = 32;
    config_.num_hidden_layers = 2;
    config_.num_attention_heads = 4;
    config_.num_key_value_heads = 2;
    config_.head_dim = 8;
    config_.intermediate_size = 48;
    config_.initializer_range = 0.5;  // large scores: attention far from uniform
    config_.use_qk_norm = false;
    config_.gate.position = GatePosition::sdpa;
    options_.sequences = 5;
    options_.seq_len = 40;
    options_.from_position = 8;
    options_.batch = 2;
    options_.maps = {{1, 3}};
    options_.map_size = 40;
  }
  void TearDown() override { fs::remove(path_); }
  // Layer 0 a Gated DeltaNet (1 key head, 2 value heads of 8), layer 1 full attention.
  void make_hybrid() {
    config_.layer_specs = {{.attention = AttentionKind::linear},
                           {.attention = AttentionKind::full}};
    config_.linear_num_key_heads = 1;
    config_.linear_num_value_heads = 2;
    config_.linear_key_head_dim = 8;
    config_.linear_value_head_dim = 8;
  }
  // The first two sequences through a forward pass, as the analysis's first batch saw them.
  void forward_first_batch(TrainState& state) {
    const TokenShard shard(path_);
    DataLoader loader(shard, {2, options_.seq_len, WindowKind::bos, 0, false});
    ids_.resize(2 * options_.seq_len);
    targets_.resize(ids_.size());
    loader.fill(0, 2, ids_.data(), targets_.data());
    state.forward({ids_.data(), targets_.data(), 2, options_.seq_len});
  }
  std::vector<int32_t> ids_, targets_;
  std::string path_;
  Config config_;
  AnalysisOptions options_;
};

TEST_F(Analysis, FirstTokenAttentionIsTheSoftmaxOfTheScores) {
  Weights weights(config_);
  weights.init(1);
  const TokenShard shard(path_);
  options_.sequences = 2;  // one batch: the views below hold exactly these sequences
  const AnalysisResult typed = analyze(weights, shard, options_);
  const json r = to_json(typed);
  // The typed result and its JSON say the same.
  ASSERT_EQ(typed.layers.size(), 2u);
  EXPECT_EQ(r["f_attn"].get<double>(), typed.f_attn);
  EXPECT_EQ(r["m_act"].get<double>(), typed.m_act);
  EXPECT_EQ(r["layers"][1]["max_abs_hidden"].get<double>(), typed.layers[1].max_abs_hidden);
  EXPECT_EQ(r["layers"][0]["first_token_attention"].get<std::vector<double>>(),
            typed.layers[0].first_token_attention);
  EXPECT_EQ(r.contains("gate_score"), typed.gate_score.has_value());
  TrainState state(weights);
  LayerViewRecorder views(2, nullptr);
  state.set_hooks(&views);
  forward_first_batch(state);
  const int T = options_.seq_len, d = 8;
  for (int l = 0; l < 2; ++l) {
    const LayerView& v = views.layer(l);
    for (int h = 0; h < 4; ++h) {
      double expected = 0;
      for (int b = 0; b < 2; ++b)
        for (int t = 1; t < T; ++t) {
          std::vector<double> scores;
          for (int u = 0; u <= t; ++u) {
            double dot = 0;
            for (int i = 0; i < d; ++i)
              dot += v.q[(b * T + t) * v.ld_q + h * d + i] *
                     v.k[(b * T + u) * v.ld_k + (h / 2) * d + i];
            scores.push_back(dot / std::sqrt(double(d)));
          }
          double z = 0;
          for (double x : scores) z += std::exp(x);
          expected += std::exp(scores[0]) / z;
        }
      expected /= 2.0 * (T - 1);
      EXPECT_NEAR(r["layers"][l]["first_token_attention"][h].get<double>(), expected, 1e-5);
    }
  }
  // Rows of an attention map sum to 1; their peaks are far above uniform (a non-trivial test).
  double peak_over_uniform = 0;
  const auto& rows = r["attention_maps"][0]["probabilities"];
  for (size_t t = 0; t < rows.size(); ++t) {
    double sum = 0, peak = 0;
    for (const auto& p : rows[t]) sum += p.get<double>(), peak = std::max(peak, p.get<double>());
    EXPECT_NEAR(sum, 1.0, 1e-5);
    peak_over_uniform += peak * double(t + 1) / double(rows.size());
  }
  EXPECT_GT(peak_over_uniform, 3.0);
}

TEST_F(Analysis, UniformAttentionAndAZeroGate) {
  Weights weights(config_);
  weights.init(2);
  for (const TensorSpec& t : weights.layout().tensors())
    if (t.name.find("q_proj") != std::string::npos || t.name.find("sdpa_gate") != std::string::npos)
      std::fill_n(weights.data() + t.offset, t.numel, 0.0f);
  const json r = to_json(analyze(weights, TokenShard(path_), options_));
  double uniform = 0;
  for (int t = 1; t < options_.seq_len; ++t) uniform += 1.0 / (t + 1);
  uniform /= options_.seq_len - 1;
  EXPECT_NEAR(r["uniform"]["f_attn"].get<double>(), uniform, 1e-12);
  EXPECT_NEAR(r["f_attn"].get<double>(), uniform, 1e-6);
  EXPECT_EQ(r["sink_fraction"].get<double>(), 0.0);
  EXPECT_NEAR(r["gate_score"].get<double>(), 0.5, 1e-7);
  for (const auto& layer : r["layers"]) {
    const json& g = layer["gate"];
    for (int h = 0; h < 4; ++h) {
      EXPECT_EQ(g["fraction_below_0.1"][h].get<double>(), 0.0);
      EXPECT_NEAR(g["mean_abs_after"][h].get<double>(), 0.5 * g["mean_abs_before"][h].get<double>(),
                  1e-6);
    }
    const auto counts = g["histogram"]["counts"].get<std::vector<int64_t>>();
    EXPECT_EQ(counts[10], int64_t(options_.sequences) * options_.seq_len * 32)
        << "every score in [0.5, 0.55)";
  }
}

TEST_F(Analysis, MassiveActivationIsTheLargestHiddenState) {
  Weights weights(config_);
  weights.init(3);
  options_.sequences = 2;
  const json r = to_json(analyze(weights, TokenShard(path_), options_));
  TrainState state(weights);
  LayerViewRecorder views(2, nullptr);
  state.set_hooks(&views);
  forward_first_batch(state);
  double mean = 0;
  for (int l = 0; l < 2; ++l) {
    const LayerView& v = views.layer(l);
    float max = 0;
    for (int64_t i = 0; i < int64_t(2) * options_.seq_len * 32; ++i)
      max = std::max(max, std::abs(v.output[i]));
    EXPECT_EQ(r["layers"][l]["max_abs_hidden"].get<double>(), double(max));
    mean += max / 2.0;
  }
  EXPECT_NEAR(r["m_act"].get<double>(), mean, 1e-9);
}

// The projection inputs' statistics against a two-pass computation over the same tensors, which a
// hook of the test's own copies out of a forward pass of the analysis's first batch: every value
// of a site pooled, the kurtosis E[(x - m)^4] / E[(x - m)^2]^2 and the largest |x|. A dense layer
// shows all four sites; the mixer's input is the input norm's output (hidden wide), the down
// projection's the intermediate width.
TEST_F(Analysis, ProjectionInputsAreTheKurtosisAndLargestMagnitudeOfWhatProjectionsRead) {
  Weights weights(config_);
  weights.init(4);
  options_.sequences = 2;  // one batch: the one forward_first_batch runs
  const AnalysisResult r = analyze(weights, TokenShard(path_), options_);
  struct Copier final : PassHooks {
    std::map<std::pair<int, HookSite>, std::vector<double>> values;
    void on_tensor(const HookEvent& e) override {
      if (std::string(projection_input_name(e.site)).empty()) return;
      auto& v = values[{e.layer, e.site}];
      for (int64_t row = 0; row < e.tensor.rows; ++row)
        for (int c = 0; c < e.tensor.cols; ++c) v.push_back(e.tensor.data[row * e.tensor.ld + c]);
    }
  } copier;
  TrainState state(weights);
  state.set_hooks(&copier);
  forward_first_batch(state);
  const HookSite sites[] = {HookSite::mixer_input, HookSite::mixer_output_input,
                            HookSite::mlp_input, HookSite::mlp_down_input};
  const int64_t rows = 2 * int64_t(options_.seq_len), widths[] = {32, 4 * 8, 32, 48};
  for (int l = 0; l < 2; ++l) {
    ASSERT_EQ(r.layers[l].projection_inputs.size(), 4u) << "layer " << l;
    for (int i = 0; i < 4; ++i) {
      const std::vector<double>& v = copier.values[{l, sites[i]}];
      ASSERT_EQ(int64_t(v.size()), rows * widths[i]) << projection_input_name(sites[i]);
      double mean = 0, most = 0;
      for (double x : v) mean += x / double(v.size()), most = std::max(most, std::abs(x));
      double m2 = 0, m4 = 0;
      for (double x : v) {
        const double d = (x - mean) * (x - mean);
        m2 += d / double(v.size()), m4 += d * d / double(v.size());
      }
      const ProjectionInputStats& got = r.layers[l].projection_inputs[size_t(i)];
      EXPECT_EQ(got.site, projection_input_name(sites[i]));
      EXPECT_EQ(got.values, int64_t(v.size()));
      EXPECT_EQ(got.max_abs, most) << got.site;
      EXPECT_NEAR(got.mean, mean, 1e-12) << got.site;
      EXPECT_NEAR(got.kurtosis, m4 / (m2 * m2), 1e-9 * m4 / (m2 * m2)) << got.site;
      EXPECT_GT(got.kurtosis, 1.0) << got.site;  // no distribution is flatter than two points
    }
  }
  const json j = to_json(r);
  EXPECT_EQ(j["layers"][1]["projection_inputs"][3]["site"], "mlp_down_input");
}

// A hybrid: the Gated DeltaNet layer gets M-Act only; F-Attn, Sink and the gate score are the
// full-attention layer's, and an attention map of the DeltaNet layer is refused by name.
TEST_F(Analysis, AHybridAveragesAttentionOverItsFullAttentionLayers) {
  make_hybrid();
  Weights weights(config_);
  weights.init(1);
  options_.maps = {};
  const AnalysisResult r = analyze(weights, TokenShard(path_), options_);
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_FALSE(r.layers[0].attention);
  EXPECT_TRUE(r.layers[0].first_token_attention.empty());
  EXPECT_FALSE(r.layers[0].gate.has_value());
  EXPECT_EQ(r.attention_layers, 1);
  EXPECT_EQ(r.f_attn, r.layers[1].f_attn);
  EXPECT_EQ(*r.gate_score, r.layers[1].gate->layer_mean_score);
  EXPECT_NEAR(r.m_act, (r.layers[0].max_abs_hidden + r.layers[1].max_abs_hidden) / 2, 1e-9);
  EXPECT_GT(r.layers[0].max_abs_hidden, 0);
  EXPECT_EQ(r.layers[0].projection_inputs.size(), 4u);  // in_proj's and out_proj's inputs too
  EXPECT_EQ(to_json(r)["layers"][0]["kind"], "linear_attention");
  options_.maps = {{0, 0}};
  EXPECT_THROW(analyze(weights, TokenShard(path_), options_), Error);
}

// A Gated DeltaNet layer's gates against values set by hand: with in_proj_z, in_proj_b and
// in_proj_a zero, silu(z) = 0, beta = sigmoid(0) = 1/2 and exp(g) = exp(-exp(A_log)
// softplus(dt_bias)) at every token; the gdn_gate intervention's open gate is 1 everywhere and a
// constant scales it.
TEST_F(Analysis, DeltaNetGatesAreMeasuredAndChangedAsSet) {
  make_hybrid();
  Weights weights(config_);
  weights.init(1);
  options_.maps = {};
  const AnalysisResult random_init = analyze(weights, TokenShard(path_), options_);
  const DeltaNetLayerStats& r0 = *random_init.layers[0].delta_net;
  ASSERT_EQ(r0.mean_gate.size(), 2u);
  EXPECT_FALSE(random_init.layers[1].delta_net.has_value());
  EXPECT_NE(r0.layer_mean_gate, 0.0);
  EXPECT_EQ(*random_init.delta_net_gate, r0.layer_mean_gate);
  EXPECT_EQ(to_json(random_init)["layers"][0]["delta_net"]["mean_gate"].size(), 2u);
  // A constant gate of 2: silu(z) doubled wherever the hook sees it.
  AnalysisOptions doubled = options_;
  add_intervention(doubled.interventions, "gdn_gate=constant:2", 2, options_.seq_len);
  const AnalysisResult twice = analyze(weights, TokenShard(path_), doubled);
  for (int h = 0; h < 2; ++h)
    EXPECT_NEAR(twice.layers[0].delta_net->mean_gate[h], 2 * r0.mean_gate[h], 1e-6);
  EXPECT_NE(twice.loss, random_init.loss);
  EXPECT_EQ(*twice.unmodified_loss, random_init.loss);

  const double dt_bias[2] = {0.3, -1.2}, a_log[2] = {-0.5, 0.7};
  for (const TensorSpec& spec : weights.layout().tensors()) {
    float* x = weights.data() + spec.offset;
    for (const char* zeroed : {"in_proj_z", "in_proj_b", "in_proj_a"})
      if (spec.name.find(zeroed) != std::string::npos) std::fill(x, x + spec.numel, 0.0f);
    if (spec.name.find("dt_bias") != std::string::npos)
      for (int h = 0; h < 2; ++h) x[h] = float(dt_bias[h]);
    if (spec.name.find("A_log") != std::string::npos)
      for (int h = 0; h < 2; ++h) x[h] = float(a_log[h]);
  }
  const AnalysisResult set = analyze(weights, TokenShard(path_), options_);
  const DeltaNetLayerStats& d = *set.layers[0].delta_net;
  for (int h = 0; h < 2; ++h) {
    const double decay = std::exp(-std::exp(a_log[h]) * std::log1p(std::exp(dt_bias[h])));
    EXPECT_NEAR(d.mean_decay[h], decay, 1e-6) << h;
    EXPECT_NEAR(d.mean_beta[h], 0.5, 1e-7) << h;
    EXPECT_EQ(d.mean_gate[h], 0.0) << h;
    EXPECT_EQ(d.fraction_gate_below_01[h], 1.0) << h;
  }
  AnalysisOptions open = options_;
  add_intervention(open.interventions, "layer:0:gdn_gate=open", 2, options_.seq_len);
  const AnalysisResult opened = analyze(weights, TokenShard(path_), open);
  const DeltaNetLayerStats& o = *opened.layers[0].delta_net;
  for (int h = 0; h < 2; ++h) {
    EXPECT_EQ(o.mean_gate[h], 1.0) << h;
    EXPECT_EQ(o.mean_gate_first[h], 1.0) << h;
    EXPECT_EQ(o.fraction_gate_below_01[h], 0.0) << h;
  }
  // gdn_gate names a Gated DeltaNet layer; gate and value name full-attention ones.
  for (const char* wrong : {"layer:1:gdn_gate=open", "layer:0:gate=open", "layer:0:value=zero"}) {
    AnalysisOptions bad = options_;
    add_intervention(bad.interventions, wrong, 2, options_.seq_len);
    EXPECT_THROW(analyze(weights, TokenShard(path_), bad), Error) << wrong;
  }
}

// A mixture-of-experts layer's router: with its weights and the shared expert gate's zero, every
// token sees a uniform softmax (entropy ratio 1), ties choose experts 0 and 1 (load 1/2 each,
// experts 2 and 3 dead, the largest load twice the balanced one, half the mass chosen) and the
// shared gate scores sigmoid(0) = 1/2 (all in the sixth tenth); a random router is in between.
TEST_F(Analysis, RouterStatisticsOfAMixtureOfExperts) {
  config_.layer_specs = {{.mlp = MlpKind::moe}, {.mlp = MlpKind::dense}};
  config_.num_experts = 4;
  config_.num_experts_per_tok = 2;
  config_.moe_intermediate_size = 16;
  config_.shared_expert_intermediate_size = 16;
  Weights weights(config_);
  weights.init(1);
  options_.maps = {};
  const AnalysisResult random_init = analyze(weights, TokenShard(path_), options_);
  ASSERT_TRUE(random_init.layers[0].router.has_value());
  EXPECT_FALSE(random_init.layers[1].router.has_value());
  const RouterLayerStats& r = *random_init.layers[0].router;
  double load = 0;
  for (double x : r.load) load += x;
  EXPECT_NEAR(load, 1.0, 1e-12);
  EXPECT_GT(r.entropy_ratio, 0.0);
  EXPECT_LT(r.entropy_ratio, 1.0);
  EXPECT_GT(r.mean_selected_mass, 0.5);  // the two most probable of four hold over half
  ASSERT_TRUE(random_init.moe.has_value());
  EXPECT_EQ(random_init.moe->layers, 1);
  EXPECT_EQ(to_json(random_init)["layers"][0]["router"]["load"].size(), 4u);
  EXPECT_FALSE(to_json(random_init)["layers"][1].contains("router"));

  const MlpParams& p = weights.layout().layers[0].mlp;
  std::fill_n(weights.data() + p.router, 4 * config_.hidden_size, 0.0f);
  std::fill_n(weights.data() + p.shared_gate, config_.hidden_size, 0.0f);
  const RouterLayerStats u = *analyze(weights, TokenShard(path_), options_).layers[0].router;
  EXPECT_NEAR(u.entropy_ratio, 1.0, 1e-6);
  EXPECT_EQ(u.load, (std::vector<double>{0.5, 0.5, 0, 0}));
  EXPECT_EQ(u.dead_experts, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(u.max_load_ratio, 2.0);
  EXPECT_NEAR(u.mean_selected_mass, 0.5, 1e-6);
  EXPECT_TRUE(u.has_shared);
  EXPECT_DOUBLE_EQ(u.shared_gate_mean, 0.5);
  EXPECT_EQ(u.shared_gate_below_01, 0.0);
  EXPECT_EQ(u.shared_gate_histogram[5], 1.0);
}

// gdn_gate on a model without Gated DeltaNet layers is refused.
TEST_F(Analysis, DeltaNetGateInterventionNeedsDeltaNetLayers) {
  Weights weights(config_);
  weights.init(1);
  AnalysisOptions o = options_;
  add_intervention(o.interventions, "gdn_gate=closed", 2, options_.seq_len);
  try {
    analyze(weights, TokenShard(path_), o);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gdn_gate needs Gated DeltaNet"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gattn
