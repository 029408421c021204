#include "model/blocks/moe_mlp.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/blocks/block_params.h"
#include "model/pass.h"
#include "model/router_balance.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"
#include "ops/small_batch_linear.h"

namespace gattn {

MlpParams add_moe_mlp_params(ParamLayout& layout, const MlpConfig& c, const std::string& prefix) {
  const int64_t C = c.hidden, E = c.moe.experts, I = c.moe.expert_intermediate,
                S = c.moe.shared_intermediate;
  MlpParams p;
  p.input_norm = layout.add(prefix + "post_attention_layernorm.weight", {C}, Init::ones, "norms");
  p.router = layout.add(prefix + "mlp.gate.weight", {E, C}, Init::normal, "router");
  for (int64_t e = 0; e < E; ++e) {
    const std::string expert = prefix + "mlp.experts." + std::to_string(e) + ".";
    const int64_t first = layout.add(expert + "gate_proj.weight", {I, C}, Init::normal, "experts");
    layout.add(expert + "up_proj.weight", {I, C}, Init::normal, "experts");
    layout.add(expert + "down_proj.weight", {C, I}, Init::normal, "experts");
    if (e == 0) p.experts = first;
  }
  p.expert_stride = 3 * I * C;
  p.expert_down_at = 2 * I * C;
  if (S > 0) {
    p.shared_gate_up =
        layout.add(prefix + "mlp.shared_expert.gate_proj.weight", {S, C}, Init::normal, "mlp");
    layout.add(prefix + "mlp.shared_expert.up_proj.weight", {S, C}, Init::normal, "mlp");
    p.shared_down =
        layout.add(prefix + "mlp.shared_expert.down_proj.weight", {C, S}, Init::normal, "mlp");
    p.shared_gate =
        layout.add(prefix + "mlp.shared_expert_gate.weight", {1, C}, Init::normal, "router");
  }
  if (c.output.sandwich_norm)
    p.output_norm = layout.add(prefix + "mlp_output_norm.weight", {C}, Init::ones, "norms");
  return p;
}

std::unique_ptr<BlockActivations> MoeMlp::plan_activations(Arena& arena, int64_t N) const {
  auto a = std::make_unique<MoeMlpActivations>();
  const int64_t C = c_.hidden, E = c_.moe.experts, k = c_.moe.top_k, I = c_.moe.expert_intermediate,
                S = c_.moe.shared_intermediate;
  arena.plan(&a->norm_rstd, N, "ln2 rstd");
  arena.plan(&a->normed, N * C, "ln2 output");
  arena.plan(&a->router_logits, N * E, "router logits");
  arena.plan(&a->probs, N * E, "router probabilities");
  arena.plan(&a->weight, N * k, "routing weights");
  arena.plan(&a->gate_up, N * k * 2 * I, "experts' gate/up projection");
  arena.plan(&a->act, N * k * I, "experts' activation");
  arena.plan(&a->expert_out, N * k * C, "experts' output");
  if (S > 0) {
    arena.plan(&a->shared_gate_up, N * 2 * S, "shared expert's gate/up projection");
    arena.plan(&a->shared_act, N * S, "shared expert's activation");
    arena.plan(&a->shared_out, N * C, "shared expert's output");
    arena.plan(&a->shared_logit, N, "shared expert's gate logit");
  }
  arena.plan(&a->moe_out, N * C, "mlp output");
  plan_block_output(arena, c_.output, N, "mlp_output_norm", a->output);
  a->choice.resize(size_t(N * k));
  return a;
}

void MoeMlp::plan_transient(Arena& arena, int64_t N, BlockActivations& a) const {
  arena.plan(&static_cast<MoeMlpActivations&>(a).gathered, N * c_.moe.top_k * c_.hidden,
             "experts' gathered inputs");
}

std::unique_ptr<BlockScratch> MoeMlp::plan_scratch(Arena& arena, int64_t N) const {
  auto s = std::make_unique<MoeMlpScratch>();
  const int64_t C = c_.hidden, E = c_.moe.experts, k = c_.moe.top_k, I = c_.moe.expert_intermediate,
                S = c_.moe.shared_intermediate;
  plan_block_output_scratch(arena, c_.output, N, s->output);
  arena.plan(&s->d_normed, N * C, "d norm output");
  arena.plan(&s->d_weight, N * k, "d routing weights");
  arena.plan(&s->d_logits, N * E, "d router logits");
  arena.plan(&s->d_probs, E, "d router probabilities (one row)");
  arena.plan(&s->d_rows, N * k * C, "d experts' output, then input");
  arena.plan(&s->d_gate_up, N * k * 2 * I, "d experts' gate/up");
  arena.plan(&s->d_act, N * k * I, "d experts' activation");
  arena.plan(&s->gathered, N * k * C, "experts' gathered inputs");
  if (S > 0) {
    arena.plan(&s->d_shared_out, N * C, "d shared expert's output");
    arena.plan(&s->d_shared_gate_up, N * 2 * S, "d shared expert's gate/up");
    arena.plan(&s->d_shared_act, N * S, "d shared expert's activation");
    arena.plan(&s->d_shared_logit, N, "d shared expert's gate logit");
  }
  return s;
}

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// rows[r] = x[token_of_row[r]] for the rows [begin, end) of the groups.
void gather_rows(float* rows, const float* x, const ExpertGroups& g, int begin, int end, int C) {
  for (int r = begin; r < end; ++r)
    std::memcpy(rows + int64_t(r) * C, x + int64_t(g.token_of_row[r]) * C, sizeof(float) * C);
}

}  // namespace

void MoeMlp::forward(const PassContext& pass, BlockActivations& activations, DecodeMemory*,
                     const float* in, float* out) const {
  auto& a = static_cast<MoeMlpActivations&>(activations);
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden, E = c_.moe.experts;
  OpSections ops(pass.exec.profile);
  ops.next("norms");
  rmsnorm_forward(a.normed, a.norm_rstd, in, w.at(p_.input_norm), {N, 1, C, C, C, 0},
                  c_.output.eps);
  ops.next("router");
  project(pass.exec, w, p_.router, a.router_logits, a.normed, N, C, E);
  moe_route_forward(a.probs, a.choice.data(), a.weight, a.router_logits, route_shape(N));
  group_by_expert(a.groups, a.choice.data(), route_shape(N));
  if (pass.router_balance) pass.router_balance->add_rows(a.probs, a.choice.data(), N, c_.moe.top_k);
  if (pass.hooks) show(pass, HookSite::router_probs, a.probs, E);
  ops.next(nullptr);  // the experts' and shared expert's sections are their own
  experts_forward(pass, a);
  if (c_.moe.shared_intermediate > 0) shared_forward(pass, a);
  if (pass.hooks) show(pass, HookSite::mlp_output, a.moe_out, C);
  ops.next("residual (and sandwich norm, clip)");
  block_output_forward(c_.output, w, p_.output_norm, N, out, in, a.moe_out, a.output);
}

// Each expert's tokens through its SwiGLU, then each token's weighted sum (choices in order).
void MoeMlp::experts_forward(const PassContext& pass, MoeMlpActivations& a) const {
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden, E = c_.moe.experts, k = c_.moe.top_k,
            I = c_.moe.expert_intermediate;
  const ExpertGroups& g = a.groups;
  OpSections ops(pass.exec.profile);
  for (int e = 0; e < E; ++e)  // experts paged from disk: read the chosen ones in, in one go
    if (g.start[e + 1] > g.start[e]) {
      w.will_need(p_.experts + e * p_.expert_stride, 2 * int64_t(I) * C);
      w.will_need(p_.expert_down(e), int64_t(C) * I);
    }
  std::vector<int> chosen;  // the experts some token chose (one no token chose is not read)
  int most_rows = 0;
  for (int e = 0; e < E; ++e)
    if (g.start[e + 1] > g.start[e]) {
      chosen.push_back(e);
      most_rows = std::max(most_rows, g.start[e + 1] - g.start[e]);
    }
  auto run_expert = [&](int e, OpSections& sections) {
    const int r0 = g.start[e], n = g.start[e + 1] - r0;
    sections.next("experts' gather");
    gather_rows(a.gathered, a.normed, g, r0, r0 + n, C);
    swiglu_mlp_forward(pass, expert(e), a.gathered + int64_t(r0) * C, n,
                       a.gate_up + int64_t(r0) * 2 * I, a.act + int64_t(r0) * I,
                       a.expert_out + int64_t(r0) * C, sections);
  };
  if (most_rows <= kSmallBatchRows && chosen.size() > 1 &&
      pass.exec.precision == GemmPrecision::fp32) {
    // A decode step: each expert's few rows go through the small-batch kernel, whose products
    // are the same whatever the threads (ops/small_batch_linear.h). The threads take whole
    // experts (their rows are disjoint), one parallel region a layer instead of two an expert:
    // each thread streams its experts' matrices back to back.
    ops.next("experts (one a thread)");
    OpSections unprofiled(nullptr);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < chosen.size(); ++i) run_expert(chosen[i], unprofiled);
  } else {
    for (int e : chosen) run_expert(e, ops);
  }
  ops.next("experts' weighted sum");
  for (int t = 0; t < N; ++t) {
    float* o = a.moe_out + int64_t(t) * C;
    std::fill(o, o + C, 0.0f);
    for (int j = 0; j < k; ++j) {
      const float wt = a.weight[int64_t(t) * k + j];
      const float* y = a.expert_out + int64_t(g.row_of_choice[size_t(t) * k + j]) * C;
      for (int i = 0; i < C; ++i) o[i] += wt * y[i];
    }
  }
}

// moe_out += sigmoid(x . shared_gate) shared_expert(x).
void MoeMlp::shared_forward(const PassContext& pass, MoeMlpActivations& a) const {
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden;
  OpSections ops(pass.exec.profile);
  swiglu_mlp_forward(pass, shared_expert(), a.normed, N, a.shared_gate_up, a.shared_act,
                     a.shared_out, ops);
  project(pass.exec, w, p_.shared_gate, a.shared_logit, a.normed, N, C, 1);
  if (pass.hooks) {  // the gate's scores, shown but not read back
    a.shared_gate_scores.resize(size_t(N));
    for (int t = 0; t < N; ++t) a.shared_gate_scores[size_t(t)] = sigmoid(a.shared_logit[t]);
    show(pass, HookSite::shared_expert_gate, a.shared_gate_scores.data(), 1);
  }
  for (int t = 0; t < N; ++t) {
    const float gate = sigmoid(a.shared_logit[t]);
    float* o = a.moe_out + int64_t(t) * C;
    const float* y = a.shared_out + int64_t(t) * C;
    for (int i = 0; i < C; ++i) o[i] += gate * y[i];
  }
}

void MoeMlp::show(const PassContext& pass, HookSite site, float* data, int cols) const {
  pass.hooks->on_tensor(
      tensor_event(layer_, site, {data, pass.rows(), cols, cols}, pass.positions, pass.seq_len));
}

void MoeMlp::backward(const PassContext& pass, const BlockActivations& activations,
                      BlockScratch& scratch, Gradients& g, const float* in, float* d) const {
  const auto& a = static_cast<const MoeMlpActivations&>(activations);
  auto& s = static_cast<MoeMlpScratch&>(scratch);
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden, E = c_.moe.experts;
  OpSections ops(pass.exec.profile);
  ops.next("residual (and sandwich norm, clip)");
  const float* d_out =
      block_output_backward(c_.output, w, p_.output_norm, N, d, a.moe_out, a.output, s.output, g);
  std::fill(s.d_normed, s.d_normed + int64_t(N) * C, 0.0f);
  if (c_.moe.shared_intermediate > 0) shared_backward(pass, a, s, g, d_out);
  experts_backward(pass, a, s, g, d_out);
  ops.next("router");
  moe_route_backward(s.d_logits, s.d_weight, a.probs, a.choice.data(), a.weight, route_shape(N),
                     s.d_probs);
  if (pass.router_balance) pass.router_balance->add_gradient(s.d_logits, a.probs, N);
  linear_backward(pass.exec, s.d_normed, g.at(p_.router), s.d_logits, a.normed, w.at(p_.router), N,
                  C, E, /*accumulate_d_in=*/true);
  ops.next("norms");
  rmsnorm_backward(d, g.at(p_.input_norm), s.d_normed, in, w.at(p_.input_norm), a.norm_rstd,
                   {N, 1, C, C, C, 0}, true);
}

// Adds the experts' share to d_normed and writes d_weight.
void MoeMlp::experts_backward(const PassContext& pass, const MoeMlpActivations& a, MoeMlpScratch& s,
                              Gradients& g, const float* d_out) const {
  const int N = pass.rows(), C = c_.hidden, E = c_.moe.experts, k = c_.moe.top_k,
            I = c_.moe.expert_intermediate;
  const ExpertGroups& groups = a.groups;
  OpSections ops(pass.exec.profile);
  ops.next("experts' weighted sum");
  for (int t = 0; t < N; ++t) {  // d expert_out = weight x d_out; d weight = d_out . expert_out
    const float* dy = d_out + int64_t(t) * C;
    for (int j = 0; j < k; ++j) {
      const int64_t row = groups.row_of_choice[size_t(t) * k + j];
      const float wt = a.weight[int64_t(t) * k + j];
      const float* y = a.expert_out + row * C;
      float* dr = s.d_rows + row * C;
      float dot = 0;
      for (int i = 0; i < C; ++i) {
        dr[i] = wt * dy[i];
        dot += dy[i] * y[i];
      }
      s.d_weight[int64_t(t) * k + j] = dot;
    }
  }
  for (int e = 0; e < E; ++e) {
    const int r0 = groups.start[e], n = groups.start[e + 1] - r0;
    if (n == 0) continue;
    float* d_rows = s.d_rows + int64_t(r0) * C;  // d output in, d input out (the gather's rows)
    ops.next("experts' gather");
    gather_rows(s.gathered, a.normed, groups, r0, r0 + n, C);
    swiglu_mlp_backward(pass, expert(e), s.gathered + int64_t(r0) * C,
                        a.gate_up + int64_t(r0) * 2 * I, a.act + int64_t(r0) * I, d_rows, n,
                        s.d_act + int64_t(r0) * I, s.d_gate_up + int64_t(r0) * 2 * I, d_rows, false,
                        g, ops);
  }
  ops.next("experts' scatter");
  const int rows = N * k;  // expert order, then token order: one fixed order of the sums
  for (int r = 0; r < rows; ++r) {
    float* dx = s.d_normed + int64_t(groups.token_of_row[r]) * C;
    const float* dr = s.d_rows + int64_t(r) * C;
    for (int i = 0; i < C; ++i) dx[i] += dr[i];
  }
}

void MoeMlp::shared_backward(const PassContext& pass, const MoeMlpActivations& a, MoeMlpScratch& s,
                             Gradients& g, const float* d_out) const {
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden;
  OpSections ops(pass.exec.profile);
  ops.next("shared expert");
  for (int t = 0; t < N; ++t) {
    const float gate = sigmoid(a.shared_logit[t]);
    const float* dy = d_out + int64_t(t) * C;
    const float* y = a.shared_out + int64_t(t) * C;
    float* dr = s.d_shared_out + int64_t(t) * C;
    float dot = 0;
    for (int i = 0; i < C; ++i) {
      dr[i] = gate * dy[i];
      dot += dy[i] * y[i];
    }
    s.d_shared_logit[t] = dot * gate * (1 - gate);
  }
  swiglu_mlp_backward(pass, shared_expert(), a.normed, a.shared_gate_up, a.shared_act,
                      s.d_shared_out, N, s.d_shared_act, s.d_shared_gate_up, s.d_normed, true, g,
                      ops);
  linear_backward(pass.exec, s.d_normed, g.at(p_.shared_gate), s.d_shared_logit, a.normed,
                  w.at(p_.shared_gate), N, C, 1, /*accumulate_d_in=*/true);
}

}  // namespace gattn
