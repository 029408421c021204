#include "model/blocks/dense_mlp.h"

#include "model/blocks/block_params.h"
#include "model/pass.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"

namespace gattn {

MlpParams add_dense_mlp_params(ParamLayout& layout, const MlpConfig& c, const std::string& prefix) {
  const int64_t C = c.hidden, I = c.intermediate;
  MlpParams p;
  p.input_norm = layout.add(prefix + "post_attention_layernorm.weight", {C}, Init::ones, "norms");
  p.gate_up = layout.add(prefix + "mlp.gate_proj.weight", {I, C}, Init::normal, "mlp");
  layout.add(prefix + "mlp.up_proj.weight", {I, C}, Init::normal, "mlp");
  p.down = layout.add(prefix + "mlp.down_proj.weight", {C, I}, Init::normal, "mlp");
  if (c.output.sandwich_norm)
    p.output_norm = layout.add(prefix + "mlp_output_norm.weight", {C}, Init::ones, "norms");
  return p;
}

std::unique_ptr<BlockActivations> DenseMlp::plan_activations(Arena& arena, int64_t N) const {
  auto a = std::make_unique<DenseMlpActivations>();
  const int64_t C = c_.hidden, I = c_.intermediate;
  arena.plan(&a->norm_rstd, N, "ln2 rstd");
  arena.plan(&a->normed, N * C, "ln2 output");
  arena.plan(&a->gate_up, N * 2 * I, "mlp gate/up projection");
  arena.plan(&a->act, N * I, "mlp activation");
  arena.plan(&a->down_out, N * C, "mlp output");
  plan_block_output(arena, c_.output, N, "mlp_output_norm", a->output);
  return a;
}

std::unique_ptr<BlockScratch> DenseMlp::plan_scratch(Arena& arena, int64_t N) const {
  auto s = std::make_unique<DenseMlpScratch>();
  const int64_t C = c_.hidden, I = c_.intermediate;
  plan_block_output_scratch(arena, c_.output, N, s->output);
  arena.plan(&s->d_normed, N * C, "d norm output");
  arena.plan(&s->d_gate_up, N * 2 * I, "d mlp gate/up");
  arena.plan(&s->d_act, N * I, "d mlp activation");
  return s;
}

void DenseMlp::forward(const PassContext& pass, BlockActivations& activations, DecodeMemory*,
                       const float* in, float* out) const {
  auto& a = static_cast<DenseMlpActivations&>(activations);
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden;
  OpSections ops(pass.exec.profile);
  ops.next("norms");
  rmsnorm_forward(a.normed, a.norm_rstd, in, w.at(p_.input_norm), {N, 1, C, C, C, 0},
                  c_.output.eps);
  swiglu_mlp_forward(pass, mlp(), a.normed, N, a.gate_up, a.act, a.down_out, ops);
  if (pass.hooks) {
    pass.hooks->on_tensor(tensor_event(layer_, HookSite::mlp_input, {a.normed, N, C, C},
                                       pass.positions, pass.seq_len));
    const int I = c_.intermediate;
    pass.hooks->on_tensor(tensor_event(layer_, HookSite::mlp_down_input, {a.act, N, I, I},
                                       pass.positions, pass.seq_len));
    pass.hooks->on_tensor(tensor_event(layer_, HookSite::mlp_output, {a.down_out, N, C, C},
                                       pass.positions, pass.seq_len));
  }
  ops.next("residual (and sandwich norm, clip)");
  block_output_forward(c_.output, w, p_.output_norm, N, out, in, a.down_out, a.output);
}

void DenseMlp::backward(const PassContext& pass, const BlockActivations& activations,
                        BlockScratch& scratch, Gradients& g, const float* in, float* d) const {
  const auto& a = static_cast<const DenseMlpActivations&>(activations);
  auto& s = static_cast<DenseMlpScratch&>(scratch);
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden;
  OpSections ops(pass.exec.profile);
  ops.next("residual (and sandwich norm, clip)");
  const float* d_down =
      block_output_backward(c_.output, w, p_.output_norm, N, d, a.down_out, a.output, s.output, g);
  swiglu_mlp_backward(pass, mlp(), a.normed, a.gate_up, a.act, d_down, N, s.d_act, s.d_gate_up,
                      s.d_normed, false, g, ops);
  ops.next("norms");
  rmsnorm_backward(d, g.at(p_.input_norm), s.d_normed, in, w.at(p_.input_norm), a.norm_rstd,
                   {N, 1, C, C, C, 0}, true);
}

}  // namespace gattn
