// The Gated DeltaNet block's backward pass: the forward's ops in reverse, each op's own backward
// (ops/delta_net_ops.h, the chunked delta rule's in ops/delta_rule.h).
#include <cmath>

#include "model/blocks/gated_delta_net.h"
#include "ops/matmul.h"
#include "ops/rmsnorm.h"

namespace gattn {

void GatedDeltaNet::backward(const PassContext& pass, const BlockActivations& activations,
                             BlockScratch& scratch, Gradients& g, const float* in, float* d) const {
  const auto& a = static_cast<const GatedDeltaNetActivations&>(activations);
  auto& s = static_cast<GatedDeltaNetScratch&>(scratch);
  const Weights& w = pass.weights;
  const int B = pass.batch, T = pass.seq_len, N = pass.rows(), C = c_.hidden;
  const int P = d_.projection_stride(), ch = d_.conv_channels(), vw = d_.value_width();
  const int VH = d_.value_heads;
  OpSections ops(pass.exec.profile);
  ops.next("delta_net recomputed: conv, l2 norms, gated norm");
  conv_and_norms(pass, a);
  gated_rmsnorm_forward(a.core, a.proj + ch, w.at(p_.head_norm), N, VH, d_.value_dim, vw, P,
                        c_.output.eps, a.gated, vw, static_cast<float*>(nullptr));
  ops.next("residual (and sandwich norm, clip)");
  const float* d_raw =
      block_output_backward(c_.output, w, p_.output_norm, N, d, a.o_out, a.output, s.output, g);
  ops.next("delta_net out_proj");
  linear_backward(pass.exec, s.d_gated, g.at(p_.o_proj), d_raw, a.gated, w.at(p_.o_proj), N, vw, C);
  ops.next("delta_net gated norm");
  std::fill_n(s.d_proj, int64_t(N) * P, 0.0f);  // the padding columns stay zero
  gated_rmsnorm_backward(a.core, a.proj + ch, w.at(p_.head_norm), a.core_inv_rms, s.d_gated, N, VH,
                         d_.value_dim, vw, P, vw, s.d_core, s.d_proj + ch, g.at(p_.head_norm));
  const DeltaRuleShape shape = delta_rule_shape(d_, B, T);
  const DeltaRuleInputs<float> inputs = delta_rule_inputs(d_, a.qkv, a.g, a.beta, 0);
  ops.next("delta rule");
  delta_rule_chunked_backward<float>(
      pass.exec, shape, inputs, nullptr, s.d_core,
      {s.d_qkv, s.d_qkv + d_.key_width(), s.d_qkv + 2 * d_.key_width(), s.d_g, s.d_beta, nullptr});
  ops.next("delta_net l2 norms and gates");
  const float* b_in = a.proj + ch + vw;
  float* d_b = s.d_proj + ch + vw;
  delta_gates_backward(b_in + VH, b_in, P, w.at(p_.a_log), w.at(p_.dt_bias), N, VH, a.g, a.beta,
                       s.d_g, s.d_beta, VH, d_b + VH, d_b, g.at(p_.a_log), g.at(p_.dt_bias));
  l2_normalize_backward(s.d_qkv, a.qkv, a.q_inv_norm, N, d_.key_heads, d_.key_dim, ch,
                        1 / std::sqrt(float(d_.key_dim)));
  l2_normalize_backward(s.d_qkv + d_.key_width(), a.qkv + d_.key_width(), a.k_inv_norm, N,
                        d_.key_heads, d_.key_dim, ch, 1.0f);
  ops.next("delta_net conv");
  short_conv_backward(delta_net_conv_shape(d_, B, T), a.proj, w.at(p_.conv), a.conv_pre, s.d_qkv,
                      s.d_proj, g.at(p_.conv));
  ops.next("delta_net projection");
  linear_backward(pass.exec, s.d_normed, g.at(p_.proj), s.d_proj, a.normed, w.at(p_.proj), N, C,
                  d_.projection_rows(), false, P);
  ops.next("norms");
  rmsnorm_backward(d, g.at(p_.input_norm), s.d_normed, in, w.at(p_.input_norm), a.norm_rstd,
                   {N, 1, C, C, C, 0}, true);
}

}  // namespace gattn
