// Mixture-of-experts MLP blocks (model/blocks/moe_mlp.h, ops/moe_routing.h): the routing against
// a sort, its backward against central differences; the block's forward against a float64
// computation of the same weights; every gradient of the block (router, experts, shared expert
// and its gate, norm, input) against central differences; chunked decode against one forward
// pass; repeated runs bitwise equal; the config's MoE fields named when wrong. (A whole model's
// gradients against transformers' float64 ones: tests/test_hf_load.cpp, qwen3_next_moe_*.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "model/arena.h"
#include "model/blocks/moe_mlp.h"
#include "model/infer_state.h"
#include "model/layout.h"
#include "model/pass.h"
#include "model/router_balance.h"
#include "model/train_state.h"
#include "model_test_data.h"
#include "ops/moe_routing.h"
#include "train/step.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

std::vector<float> normal_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(MoeRouting, ChoosesTheKMostProbableExpertsAndWeighsThem) {
  const int rows = 40, E = 12, k = 4;
  const std::vector<float> logits = normal_floats(size_t(rows) * E, 1, 2.0f);
  for (bool norm : {true, false}) {
    const RouteShape shape{.rows = rows, .experts = E, .k = k, .norm_topk = norm};
    std::vector<float> probs(size_t(rows) * E), weight(size_t(rows) * k);
    std::vector<int32_t> choice(size_t(rows) * k);
    moe_route_forward(probs.data(), choice.data(), weight.data(), logits.data(), shape);
    for (int t = 0; t < rows; ++t) {
      const float* x = logits.data() + t * E;
      double sum = 0;
      for (int e = 0; e < E; ++e) sum += std::exp(double(x[e]));
      std::vector<int> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[a] > x[b]; });
      double selected = 0;
      for (int j = 0; j < k; ++j) selected += std::exp(double(x[order[j]])) / sum;
      for (int j = 0; j < k; ++j) {
        ASSERT_EQ(choice[t * k + j], order[j]) << "token " << t << " choice " << j;
        const double p = std::exp(double(x[order[j]])) / sum;
        EXPECT_NEAR(weight[t * k + j], norm ? p / selected : p, 1e-6);
      }
    }
  }
  // Ties go to the lower expert index.
  const std::vector<float> flat(E, 0.5f);
  std::vector<float> probs(E), weight(k);
  std::vector<int32_t> choice(k);
  moe_route_forward(probs.data(), choice.data(), weight.data(), flat.data(),
                    {.rows = 1, .experts = E, .k = k});
  EXPECT_EQ(choice, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_FLOAT_EQ(weight[0], 0.25f);
}

// L = sum c . weight(logits): d_logits . v against a central difference along v.
TEST(MoeRouting, BackwardMatchesCentralDifferences) {
  const int rows = 20, E = 10, k = 3;
  const std::vector<float> logits = normal_floats(size_t(rows) * E, 2, 2.0f);
  const std::vector<float> c = normal_floats(size_t(rows) * k, 3),
                           v = normal_floats(logits.size(), 4);
  for (bool norm : {true, false}) {
    const RouteShape shape{.rows = rows, .experts = E, .k = k, .norm_topk = norm};
    std::vector<float> probs(size_t(rows) * E), weight(size_t(rows) * k), d_logits(probs.size());
    std::vector<int32_t> choice(size_t(rows) * k), base;
    auto loss = [&](double step) {
      std::vector<float> x(logits);
      for (size_t i = 0; i < x.size(); ++i) x[i] += float(step * v[i]);
      moe_route_forward(probs.data(), choice.data(), weight.data(), x.data(), shape);
      double l = 0;
      for (size_t i = 0; i < weight.size(); ++i) l += double(c[i]) * weight[i];
      return l;
    };
    loss(0);
    base = choice;
    std::vector<float> d_p(static_cast<size_t>(shape.experts));
    moe_route_backward(d_logits.data(), c.data(), probs.data(), choice.data(), weight.data(), shape,
                       d_p.data());
    double directional = 0;
    for (size_t i = 0; i < v.size(); ++i) directional += double(d_logits[i]) * v[i];
    const double h = 1e-3;
    const double plus = loss(h);
    EXPECT_EQ(choice, base) << "a step changed the selection";
    const double numeric = (plus - loss(-h)) / (2 * h);
    EXPECT_EQ(choice, base) << "a step changed the selection";
    EXPECT_NEAR(numeric, directional, 2e-3 * std::abs(directional) + 1e-4) << "norm " << norm;
    EXPECT_GT(std::abs(directional), 1e-2);
  }
}

nlohmann::json moe_json(int shared) {
  return {{"vocab_size", 120},
          {"hidden_size", 40},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 10},
          {"intermediate_size", 56},
          {"mlp_types", {"moe", "dense"}},
          {"num_experts", 6},
          {"num_experts_per_tok", 2},
          {"moe_intermediate_size", 24},
          {"shared_expert_intermediate_size", shared},
          {"gate", {{"position", "sdpa"}}}};
}

// The MoE block's output from the same weights in float64: softmax, top-k, renormalised
// weights, each selected expert's SwiGLU, the shared expert times its sigmoid gate; each token's
// choices into `choices` ([N, k]) when given.
std::vector<double> moe_reference(const Weights& w, const MlpParams& p, const MoeConfig& m,
                                  const std::vector<float>& in, int N, int C, double eps,
                                  std::vector<int32_t>* choices = nullptr,
                                  std::vector<double>* probs = nullptr) {
  const float* norm_w = w.at(p.input_norm);
  auto matvec = [&](int64_t offset, const std::vector<double>& x, int out_dim) {
    const float* W = w.at(offset);
    std::vector<double> y(size_t(out_dim), 0.0);
    for (int o = 0; o < out_dim; ++o)
      for (size_t i = 0; i < x.size(); ++i) y[o] += double(W[o * int64_t(x.size()) + i]) * x[i];
    return y;
  };
  auto swiglu = [&](int64_t gate_up, int64_t down, const std::vector<double>& x, int I) {
    const std::vector<double> gu = matvec(gate_up, x, 2 * I);
    std::vector<double> h(static_cast<size_t>(I));
    for (int i = 0; i < I; ++i) h[i] = gu[i] / (1 + std::exp(-gu[i])) * gu[I + i];
    return matvec(down, h, C);
  };
  std::vector<double> out(size_t(N) * C);
  for (int t = 0; t < N; ++t) {
    std::vector<double> x(static_cast<size_t>(C));
    double ms = 0;
    for (int i = 0; i < C; ++i) ms += double(in[t * C + i]) * in[t * C + i];
    const double r = 1 / std::sqrt(ms / C + eps);
    for (int i = 0; i < C; ++i) x[i] = in[t * C + i] * r * norm_w[i];
    const std::vector<double> logits = matvec(p.router, x, m.experts);
    std::vector<double> prob(logits.size());
    const double top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (size_t e = 0; e < logits.size(); ++e) sum += prob[e] = std::exp(logits[e] - top);
    if (probs)
      for (double q : prob) probs->push_back(q / sum);
    std::vector<int> order(size_t(m.experts));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prob[a] > prob[b]; });
    double selected = 0;
    for (int j = 0; j < m.top_k; ++j) selected += prob[order[j]] / sum;
    for (int i = 0; i < C; ++i) out[t * C + i] = in[t * C + i];
    for (int j = 0; j < m.top_k; ++j) {
      const int e = order[j];
      if (choices) choices->push_back(e);
      const double weight = prob[e] / sum / (m.norm_topk ? selected : 1.0);
      const std::vector<double> y =
          swiglu(p.experts + e * p.expert_stride, p.expert_down(e), x, m.expert_intermediate);
      for (int i = 0; i < C; ++i) out[t * C + i] += weight * y[i];
    }
    if (m.shared_intermediate > 0) {
      const std::vector<double> y =
          swiglu(p.shared_gate_up, p.shared_down, x, m.shared_intermediate);
      const double gate = 1 / (1 + std::exp(-matvec(p.shared_gate, x, 1)[0]));
      for (int i = 0; i < C; ++i) out[t * C + i] += gate * y[i];
    }
  }
  return out;
}

// The MoE block of layer 0 (block 1) run alone over N rows of one sequence.
struct BlockRun {
  BlockRun(const Weights& weights, int rows)
      : w(weights), N(rows), block(weights.block(1)), positions(rows) {
    a = block.plan_activations(arena, N);
    block.plan_transient(arena, N, *a);
    s = block.plan_scratch(arena, N);
    arena.allocate();
    std::iota(positions.begin(), positions.end(), 0);
  }
  const MoeMlpActivations& moe() const { return static_cast<const MoeMlpActivations&>(*a); }
  PassContext pass() const {
    return {.weights = w,
            .exec = exec,
            .batch = 1,
            .seq_len = N,
            .positions = positions.data(),
            .router_balance = balance};
  }
  // The block's raw output (before the residual add).
  std::vector<double> forward(const std::vector<float>& in) {
    std::vector<float> out(in.size());
    block.forward(pass(), *a, nullptr, in.data(), out.data());
    return std::vector<double>(moe().moe_out, moe().moe_out + in.size());
  }
  const Weights& w;
  const int N;
  const Block& block;
  const ExecContext exec{};
  std::vector<int32_t> positions;
  Arena arena;
  std::unique_ptr<BlockActivations> a;
  std::unique_ptr<BlockScratch> s;
  RouterBalance* balance = nullptr;
};

TEST(MoeMlp, ForwardEqualsAFloat64ComputationOfTheSameWeights) {
  for (int shared : {32, 0}) {
    Weights w(config_from_json(moe_json(shared), "test"));
    w.init(11);
    const int N = 37, C = w.config().hidden_size;
    const LayerConfig layer = layer_configs(w.config())[0];
    ASSERT_EQ(layer.mlp.kind, MlpKind::moe);
    BlockRun run(w, N);
    const std::vector<float> in = normal_floats(size_t(N) * C, 12);
    const std::vector<double> ours = run.forward(in);
    const std::vector<double> ref =
        moe_reference(w, w.layout().layers[0].mlp, layer.mlp.moe, in, N, C, layer.mlp.output.eps);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double contribution = ref[i] - double(in[i]);
      diff += (ours[i] - contribution) * (ours[i] - contribution);
      norm += contribution * contribution;
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << "shared " << shared;
    EXPECT_GT(norm, 0);
  }
}

// Every tensor of the block and its input: L = sum c . (raw output), the central difference
// (L(x + h v) - L(x - h v)) / 2h of the float64 computation of the block against the backward
// pass's gradient . v, away from top-k ties: no token's choice of experts may change between the
// points. (gattn's own fp32 forward resolves the smallest of these, the input's, only to ~3%.)
TEST(MoeMlp, GradientsMatchCentralDifferences) {
  for (int shared : {32, 0}) {
    Weights w(config_from_json(moe_json(shared), "test"));
    w.init(5);
    for (const TensorSpec& spec : w.layout().tensors())  // larger outputs: easier to resolve
      if (spec.name.rfind("model.layers.0.mlp.", 0) == 0)
        for (int64_t i = 0; i < spec.numel; ++i) w.data()[spec.offset + i] *= 4;
    const int N = 23, C = w.config().hidden_size;
    BlockRun run(w, N);
    std::vector<float> in = normal_floats(size_t(N) * C, 13);
    const std::vector<float> c = normal_floats(in.size(), 14);
    run.forward(in);
    const std::vector<int32_t> choice = run.moe().choice;
    Gradients g(w.layout());
    std::vector<float> d(c);  // dL/d(out) = c: the residual's share of d_in is c itself
    run.block.backward(run.pass(), *run.a, *run.s, g, in.data(), d.data());
    const LayerConfig layer = layer_configs(w.config())[0];
    auto loss = [&] {
      std::vector<int32_t> chosen;
      const std::vector<double> out = moe_reference(w, w.layout().layers[0].mlp, layer.mlp.moe, in,
                                                    N, C, layer.mlp.output.eps, &chosen);
      EXPECT_EQ(chosen, choice) << "a step changed the choice of experts";
      double l = 0;
      for (size_t i = 0; i < out.size(); ++i) l += double(c[i]) * (out[i] - double(in[i]));
      return l;
    };
    std::mt19937_64 rng(7);
    auto check = [&](const std::string& name, float* x, int64_t n, const float* grad,
                     const float* minus) {  // minus: subtracted from grad (d_in's residual c)
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> v(static_cast<size_t>(n)), saved(x, x + n);
      double directional = 0;
      for (int64_t i = 0; i < n; ++i)
        directional += double(v[size_t(i)] = normal(rng)) * (grad[i] - (minus ? minus[i] : 0));
      auto at = [&](float step) {
        for (int64_t i = 0; i < n; ++i) x[i] = saved[size_t(i)] + step * v[size_t(i)];
        const double l = loss();
        std::copy(saved.begin(), saved.end(), x);
        return l;
      };
      const float h = 1e-4f;
      const double numeric = (at(h) - at(-h)) / (2 * h);
      EXPECT_NEAR(numeric, directional, 1e-2 * std::abs(directional) + 1e-3)
          << name << ", shared " << shared;
      EXPECT_GT(std::abs(directional), 1e-2) << name << ": too small to check";
    };
    int checked = 0;
    for (const TensorSpec& spec : w.layout().tensors())
      if (spec.name.rfind("model.layers.0.mlp", 0) == 0 ||
          spec.name == "model.layers.0.post_attention_layernorm.weight") {
        check(spec.name, w.data() + spec.offset, spec.numel, g.at(spec.offset), nullptr);
        ++checked;
      }
    check("the input", in.data(), int64_t(in.size()), d.data(), c.data());
    // The norm, the router, 6 experts x 3, and the shared expert's 3 and its gate.
    EXPECT_EQ(checked, 2 + 18 + (shared ? 4 : 0));
  }
}

// Decoding in chunks (a decode step's GEMMs run over the few tokens each expert got) equals one
// forward pass; the same run twice is bitwise equal.
TEST(MoeMlp, ChunkedDecodeEqualsTheFullForwardAndRepeatsBitwise) {
  const ThreadScope threads(2);
  Weights w(config_from_json(moe_json(32), "test"));
  w.init(3);
  const int T = 50, V = w.config().vocab_size;
  const Tokens t(1, T, V, 4);
  std::vector<float> full(size_t(T) * V), again(full.size());
  TrainState(w).forward(t.b, full.data());
  TrainState(w).forward(t.b, again.data());
  EXPECT_EQ(full, again);
  for (const std::vector<int>& chunks : {std::vector<int>{20, 30}, std::vector<int>(T, 1)}) {
    EXPECT_LT(chunked_decode_error(w, t.ids, chunks, full, 64, 32), 1e-5)
        << chunks.size() << " chunks";
  }
}

// coef * E * sum_e f_e P_e over rows of probabilities [rows, E] and choices [rows, k], in
// float64 (model/router_balance.h).
double balance_loss(const std::vector<double>& probs, const std::vector<int32_t>& choices, int E,
                    double coef) {
  const size_t rows = probs.size() / size_t(E);
  std::vector<double> f(static_cast<size_t>(E)), P(static_cast<size_t>(E));
  for (int32_t e : choices) f[size_t(e)] += 1.0 / double(rows);
  for (size_t i = 0; i < probs.size(); ++i) P[i % size_t(E)] += probs[i] / double(rows);
  double sum = 0;
  for (int e = 0; e < E; ++e) sum += f[size_t(e)] * P[size_t(e)];
  return coef * E * sum;
}

// The load-balancing loss alone (no loss on the block's output): its value against the float64
// computation, and the gradients the backward pass gives the router, the norm and the input
// against central differences of that computation, f held at the point's choices (away from
// ties). The experts and the shared expert get none.
TEST(RouterBalance, GradientsMatchCentralDifferencesOfTheFloat64Loss) {
  Weights w(config_from_json(moe_json(32), "test"));
  w.init(21);
  const int N = 29, C = w.config().hidden_size, E = 6;
  for (const TensorSpec& spec : w.layout().tensors())  // a sharper router: larger gradients
    if (spec.name == "model.layers.0.mlp.gate.weight")
      for (int64_t i = 0; i < spec.numel; ++i) w.data()[spec.offset + i] *= 20;
  const double coef = 0.7;
  RouterBalance balance(E, coef, 1.0);
  BlockRun run(w, N);
  run.balance = &balance;
  std::vector<float> in = normal_floats(size_t(N) * C, 22);
  run.forward(in);
  balance.end_forward();
  const std::vector<int32_t> choice = run.moe().choice;
  Gradients g(w.layout());
  std::vector<float> d(in.size(), 0.0f);
  run.block.backward(run.pass(), *run.a, *run.s, g, in.data(), d.data());
  const LayerConfig layer = layer_configs(w.config())[0];
  auto loss = [&] {
    std::vector<int32_t> chosen;
    std::vector<double> probs;
    moe_reference(w, w.layout().layers[0].mlp, layer.mlp.moe, in, N, C, layer.mlp.output.eps,
                  &chosen, &probs);
    EXPECT_EQ(chosen, choice) << "a step changed the choice of experts";
    return balance_loss(probs, choice, E, coef);
  };
  EXPECT_NEAR(balance.loss(), loss(), 1e-6 * loss());
  std::mt19937_64 rng(9);
  auto check = [&](const std::string& name, float* x, int64_t n, const float* grad) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n)), saved(x, x + n);
    double directional = 0;
    for (int64_t i = 0; i < n; ++i) directional += double(v[size_t(i)] = normal(rng)) * grad[i];
    auto at = [&](float step) {
      for (int64_t i = 0; i < n; ++i) x[i] = saved[size_t(i)] + step * v[size_t(i)];
      const double l = loss();
      std::copy(saved.begin(), saved.end(), x);
      return l;
    };
    const float h = 1e-3f;
    const double numeric = (at(h) - at(-h)) / (2 * h);
    EXPECT_NEAR(numeric, directional, 1e-2 * std::abs(directional) + 1e-6) << name;
    EXPECT_GT(std::abs(directional), 1e-4) << name << ": too small to check";
  };
  const MlpParams& p = w.layout().layers[0].mlp;
  for (int64_t offset : {p.router, p.input_norm}) {
    const TensorSpec& spec = *std::find_if(w.layout().tensors().begin(), w.layout().tensors().end(),
                                           [&](const TensorSpec& t) { return t.offset == offset; });
    check(spec.name, w.data() + offset, spec.numel, g.at(offset));
  }
  check("the input", in.data(), int64_t(in.size()), d.data());
  for (const TensorSpec& spec : w.layout().tensors())
    if (spec.name.find("experts") != std::string::npos ||
        spec.name.find("shared_expert") != std::string::npos)
      for (int64_t i = 0; i < spec.numel; ++i) {
        ASSERT_EQ(g.at(spec.offset)[i], 0.0f) << spec.name;
      }
}

// Records every MoE layer's router probabilities of a pass.
struct RouterRecorder final : PassHooks {
  void on_tensor(const HookEvent& e) override {
    if (e.site != HookSite::router_probs) return;
    std::vector<double>& out = probs[e.layer];
    out.insert(out.end(), e.tensor.data, e.tensor.data + e.tensor.rows * e.tensor.cols);
  }
  std::map<int, std::vector<double>> probs;
};

// The float64 loss over rows of every layer pooled (the top-k taken from the float64 values).
double pooled_balance_loss(const std::map<int, std::vector<double>>& by_layer, int E, int k,
                           double coef) {
  std::vector<double> probs;
  std::vector<int32_t> choices;
  for (const auto& [layer, p] : by_layer) {
    probs.insert(probs.end(), p.begin(), p.end());
    for (size_t r = 0; r < p.size() / size_t(E); ++r) {
      std::vector<int> order(static_cast<size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&, r](int a, int b) { return p[r * E + a] > p[r * E + b]; });
      choices.insert(choices.end(), order.begin(), order.begin() + k);
    }
  }
  return balance_loss(probs, choices, E, coef);
}

// A step of 2 micro-batches with the global scope gives the gradient of one pass over the whole
// batch, and its loss equals the float64 loss over the whole batch (both MoE layers pooled);
// the micro_batch scope's loss is the mean of the micro-batches' own, and its gradient differs.
TEST(RouterBalance, GlobalScopeOverMicroBatchesEqualsTheWholeBatch) {
  nlohmann::json j = moe_json(16);
  j["mlp_types"] = {"moe", "moe"};
  const Config config = config_from_json(j, "test");
  const int V = config.vocab_size, seq = 12, E = config.num_experts, k = config.num_experts_per_tok;
  const Tokens t(4, seq, V, 31);
  const double coef = 0.5;
  struct Step {
    std::vector<float> grads;
    StepResult result;
  };
  auto step = [&](int micro_batches, RouterLossScope scope) {
    Weights w(config);
    w.init(17);
    TrainState state(w);
    AdamW optimizer(w.layout(), AdamWOptions{});
    Step s;
    s.result =
        optimizer_step(w, state, optimizer,
                       {t.ids.data(), t.targets.data(), micro_batches, 4 / micro_batches, seq}, 0.0,
                       0.0, {.coef = coef, .scope = scope});
    const Gradients& g = state.grads();
    s.grads.assign(g.data(), g.data() + g.size());
    return s;
  };
  const Step whole = step(1, RouterLossScope::micro_batch);
  const Step global = step(2, RouterLossScope::global);
  const Step micro = step(2, RouterLossScope::micro_batch);
  EXPECT_LT(relative_l2(global.grads.data(), whole.grads.data(), int64_t(whole.grads.size())),
            2e-6);
  EXPECT_GT(relative_l2(micro.grads.data(), whole.grads.data(), int64_t(whole.grads.size())), 1e-4);
  EXPECT_NEAR(global.result.loss, whole.result.loss, 1e-6 * whole.result.loss);

  Weights w(config);
  w.init(17);
  auto float64_loss = [&](int first_row, int rows) {
    TrainState state(w);
    RouterRecorder recorder;
    state.set_hooks(&recorder);
    state.forward({t.ids.data() + first_row * seq, nullptr, rows, seq});
    EXPECT_EQ(recorder.probs.size(), 2u);
    return pooled_balance_loss(recorder.probs, E, k, coef);
  };
  const double all = float64_loss(0, 4);
  EXPECT_NEAR(global.result.router_aux_loss, all, 1e-6 * all);
  EXPECT_NEAR(whole.result.router_aux_loss, all, 1e-6 * all);
  const double halves = (float64_loss(0, 2) + float64_loss(2, 2)) / 2;
  EXPECT_NEAR(micro.result.router_aux_loss, halves, 1e-6 * halves);
  EXPECT_GT(std::abs(halves - all), 1e-4 * all) << "the scopes should differ on this batch";
}

// Logits and a training step's gradients (load-balancing loss included): the same run repeated
// at 1 thread, and at 2, is bitwise equal; across the thread counts within 1e-6 relative.
TEST(MoeMlp, RepeatsBitwiseAtAThreadCountAndAgreesAcrossThem) {
  nlohmann::json j = moe_json(32);
  j["mlp_types"] = {"moe", "moe"};
  Weights w(config_from_json(j, "test"));
  w.init(41);
  const Tokens t(3, 48, w.config().vocab_size, 42);
  struct Run {
    std::vector<float> logits, grads;
  };
  auto run = [&](int threads) {
    const ThreadScope scope(threads);
    Run r;
    r.logits.resize(t.ids.size() * size_t(w.config().vocab_size));
    TrainState state(w);
    state.forward({t.ids.data(), nullptr, 3, 48}, r.logits.data());
    RouterBalance balance(w.config().num_experts, 0.01, 1.0);
    state.set_router_balance(&balance);
    state.forward_backward(t.b, 1.0f / 141);
    r.grads.assign(state.grads().data(), state.grads().data() + state.grads().size());
    return r;
  };
  const Run one = run(1), two = run(2);
  EXPECT_EQ(run(1).logits, one.logits);
  EXPECT_EQ(run(1).grads, one.grads);
  EXPECT_EQ(run(2).logits, two.logits);
  EXPECT_EQ(run(2).grads, two.grads);
  EXPECT_LT(relative_l2(two.logits.data(), one.logits.data(), int64_t(one.logits.size())), 1e-6);
  EXPECT_LT(relative_l2(two.grads.data(), one.grads.data(), int64_t(one.grads.size())), 1e-6);
}

TEST(MoeMlp, BadExpertFieldsAreNamed) {
  auto error_of = [](nlohmann::json j) {
    try {
      config_from_json(j, "moe.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json j = moe_json(0);
  j.erase("num_experts");
  EXPECT_NE(error_of(j).find("moe.json: field 'num_experts' is required"), std::string::npos)
      << error_of(j);
  j = moe_json(0);
  j["num_experts_per_tok"] = 7;
  EXPECT_NE(error_of(j).find("field 'num_experts_per_tok': expected at most num_experts (6)"),
            std::string::npos)
      << error_of(j);
  j = moe_json(0);
  j["moe_intermediate_size"] = -1;
  EXPECT_NE(error_of(j).find("moe_intermediate_size"), std::string::npos) << error_of(j);
  j = moe_json(0);
  j["mlp_types"] = {"moe", "sparse"};
  EXPECT_NE(error_of(j).find("mlp_types"), std::string::npos) << error_of(j);
}

}  // namespace
}  // namespace gattn
