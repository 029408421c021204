// A hybrid model (Gated DeltaNet layers beside full-attention ones, model/blocks/gated_delta_net.h)
// as a whole: decoding in chunks against each block's decode memory (the DeltaNet's convolution
// and recurrent state) equals one full forward pass; every gradient of a DeltaNet layer matches a
// central difference of the loss along a random direction; the recurrent state a pass shows at
// its hook site is the decode memory's; bad DeltaNet fields are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "io/hf_export.h"
#include "model/batched_infer_state.h"
#include "model/hooks.h"
#include "model/infer_state.h"
#include "model/layout.h"
#include "model/train_state.h"
#include "model_test_data.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

// Two DeltaNet layers (r = 2, head dims leaving SIMD tails), then a G1-gated full one.
nlohmann::json hybrid_json() {
  return {{"vocab_size", 200},
          {"hidden_size", 48},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 12},
          {"intermediate_size", 80},
          {"layer_types", {"linear_attention", "linear_attention", "full_attention"}},
          {"linear_num_key_heads", 2},
          {"linear_num_value_heads", 4},
          {"linear_key_head_dim", 12},
          {"linear_value_head_dim", 10},
          {"linear_conv_kernel_dim", 4},
          {"gate", {{"position", "sdpa"}}}};
}

// The decode tests' model (seed 3) and 150 tokens, on two threads.
struct HybridRun {
  HybridRun() : w(config_from_json(hybrid_json(), "test")), t(1, T, V, 4) { w.init(3); }
  const ThreadScope threads{2};
  Weights w;
  const int T = 150, V = 200;
  const Tokens t;
};

TEST(HybridModel, ChunkedDecodeEqualsTheFullForward) {
  const HybridRun run;
  const Weights& w = run.w;
  const int T = run.T, V = run.V;
  const Tokens& t = run.t;
  std::vector<float> full(size_t(T) * V);
  TrainState(w).forward(t.b, full.data());
  for (const std::vector<int>& chunks :
       {std::vector<int>{70, 80}, std::vector<int>{1, 2, 63, 64, 20}, std::vector<int>(T, 1)}) {
    EXPECT_LT(chunked_decode_error(w, t.ids, chunks, full, 160, 80), 2e-5)
        << chunks.size() << " chunks";
  }
}

// Copies each layer's delta_net_state as a pass shows it.
struct StateRecorder final : PassHooks {
  std::map<int, std::vector<float>> states;
  void on_tensor(const HookEvent& e) override {
    if (e.site != HookSite::delta_net_state) return;
    std::vector<float>& s = states[e.layer];
    for (int64_t r = 0; r < e.tensor.rows; ++r)
      s.insert(s.end(), e.tensor.data + r * e.tensor.ld,
               e.tensor.data + r * e.tensor.ld + e.tensor.cols);
  }
};

// The recurrent state a full pass shows at delta_net_state (the chunked form over the whole
// sequence) equals the state the decode memory holds after the same tokens were prefilled in
// chunks (model/block.h DecodeMemory::save: each DeltaNet layer's convolution rows, then its
// state).
TEST(HybridModel, TheStateAPassShowsEqualsTheDecodeMemorysState) {
  const HybridRun run;
  const Weights& w = run.w;
  const int T = run.T, V = run.V;
  const Tokens& t = run.t;
  StateRecorder recorder;
  TrainState train(w);
  train.set_hooks(&recorder);
  std::vector<float> logits(size_t(T) * V);
  train.forward(t.b, logits.data());
  ASSERT_EQ(recorder.states.size(), 2u);  // layers 0 and 1; layer 2 is full attention
  const int64_t conv = 3 * (2 * 2 * 12 + 4 * 10), state = 4 * 12 * 10;
  ASSERT_EQ(recorder.states[0].size(), size_t(state));

  BatchedInferState decode(w, 1, 160, 80);
  decode.prefill(0, t.ids.data(), 70, nullptr);
  decode.prefill(0, t.ids.data() + 70, 80, nullptr);
  const std::vector<float> piece = decode.save(0, T);
  ASSERT_EQ(piece.size(), size_t(2 * (conv + state)));
  for (int layer = 0; layer < 2; ++layer) {
    const float* kept = piece.data() + layer * (conv + state) + conv;
    float largest = 0, worst = 0;
    for (int64_t i = 0; i < state; ++i) {
      largest = std::max(largest, std::abs(kept[i]));
      worst = std::max(worst, std::abs(kept[i] - recorder.states[layer][i]));
    }
    EXPECT_GT(largest, 0.0f);
    EXPECT_LT(worst, 1e-4f * largest) << "layer " << layer;
  }
}

// Every tensor of the first DeltaNet layer: (L(w + h v) - L(w - h v)) / 2h against g . v.
TEST(HybridModel, DeltaNetGradientsMatchCentralDifferences) {
  const ThreadScope threads(2);
  Weights w(config_from_json(hybrid_json(), "test"));
  w.init(5);
  // Decays of 0.8-0.99 per token (A_log's initial values decay by up to exp(-16 * 1.3) per token,
  // which leaves the state, dt_bias and A_log almost no effect on the loss to check).
  // The DeltaNet's output, its gates' inputs scaled up, so that every one of its tensors moves the
  // loss well above the float forward's rounding.
  for (const TensorSpec& spec : w.layout().tensors()) {
    float* x = w.data() + spec.offset;
    if (spec.name.find("A_log") != std::string::npos)
      for (int64_t i = 0; i < spec.numel; ++i) x[i] = std::log(0.01f + 0.05f * float(i));
    for (const char* scaled : {"out_proj", "in_proj_a", "in_proj_b"})
      if (spec.name.find(scaled) != std::string::npos)
        for (int64_t i = 0; i < spec.numel; ++i) x[i] *= 4;
  }
  const Tokens t(2, 70, w.config().vocab_size, 6);  // two chunks of the delta rule per sequence
  TrainState train(w);
  train.zero_grads();
  train.forward_backward(t.b, 1.0f);
  const std::vector<float> grads(train.grads().data(), train.grads().data() + train.grads().size());
  std::mt19937_64 rng(7);
  int checked = 0;
  for (const TensorSpec& spec : w.layout().tensors()) {
    if (spec.name.rfind("model.layers.0.", 0) != 0) continue;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(size_t(spec.numel));
    double directional = 0;
    for (int64_t i = 0; i < spec.numel; ++i)
      directional += double(v[size_t(i)] = normal(rng)) * grads[size_t(spec.offset + i)];
    auto loss_at = [&](float step) {
      float* x = w.data() + spec.offset;
      std::vector<float> saved(x, x + spec.numel);
      for (int64_t i = 0; i < spec.numel; ++i) x[i] += step * v[size_t(i)];
      const double nats = TrainState(w).forward(t.b).nats;
      std::copy(saved.begin(), saved.end(), x);
      return nats;
    };
    // Central differences at h and h / 2 extrapolated (Richardson): the h^2 error cancels; h as
    // large as the float forward's rounding asks for tensors that move the loss little.
    const float h = float(4e-3 / std::max(1.0, std::sqrt(std::abs(directional))));
    const double wide = (loss_at(h) - loss_at(-h)) / (2 * h);
    const double narrow = (loss_at(h / 2) - loss_at(-h / 2)) / h;
    const double numeric = (4 * narrow - wide) / 3;
    EXPECT_NEAR(numeric, directional, 1e-2 * std::abs(directional) + 5e-4) << spec.name;
    EXPECT_GT(std::abs(directional), 1e-2) << spec.name << ": too small to check";
    ++checked;
  }
  EXPECT_EQ(checked,
            14);  // input norm, 4 projections, conv, dt_bias, A_log, norm, out_proj; the MLP 4
}

TEST(HybridModel, RejectsValueHeadsThatAreNoMultipleOfKeyHeads) {
  nlohmann::json j = hybrid_json();
  j["linear_num_value_heads"] = 3;
  try {
    config_from_json(j, "hybrid.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hybrid.json: field 'linear_num_value_heads'"),
              std::string::npos)
        << e.what();
  }
  j = hybrid_json();
  j["layer_types"] = {"linear_attention", "sliding_attention", "full_attention"};
  EXPECT_THROW(config_from_json(j, "hybrid.json"), Error);
}

TEST(HybridModel, ExportToAFormatWithoutDeltaNetIsRefusedByName) {
  const Config c = config_from_json(hybrid_json(), "test");
  EXPECT_NE(hf_export_refusal(c, HfExportFormat::qwen3).find("Gated DeltaNet"), std::string::npos);
  EXPECT_EQ(hf_export_refusal(c, HfExportFormat::qwen3_next), "");
}

}  // namespace
}  // namespace gattn
