// The Gated DeltaNet block (a linear attention: Yang et al., arXiv 2412.06464), exactly as
// transformers' Qwen3.5 computes it (docs/MODEL.md):
//   x = rmsnorm(in);  qkv | z | b | a = x [in_proj_qkv | in_proj_z | in_proj_b | in_proj_a]^T
//   q | k | v = silu(causal depthwise conv(qkv));  q, k l2-normalised, q times key_dim^-1/2
//   g = -exp(A_log) softplus(a + dt_bias),  beta = sigmoid(b)
//   o = gated delta rule(q, k, v, g, beta)   (ops/delta_rule.h; value head h reads key head h / r,
//   or h % key heads where the config's value heads are tiled) out = in + out_proj(norm.weight *
//   rmsnorm(o) * silu(z))   (per value head)
// Training and prefill use the chunked delta rule, a decode step of one token the recurrent one;
// the decode memory of a sequence is its last kernel - 1 convolution inputs and its fp32 state,
// so a prompt may arrive in several passes.
#pragma once
#include <vector>

#include "model/block.h"
#include "model/blocks/block_output.h"
#include "model/layer_config.h"
#include "model/layout.h"
#include "model/pass.h"
#include "ops/delta_net_ops.h"
#include "ops/delta_rule.h"

namespace gattn {

struct GatedDeltaNetActivations : BlockActivations {
  float *norm_rstd = nullptr, *normed = nullptr;  // input_layernorm
  float* proj = nullptr;                          // [rows, projection_stride] = qkv | z | b | a
  float *g = nullptr, *beta = nullptr;            // [rows, value heads]
  float* core = nullptr;                          // [rows, value width] the delta rule's output
  float* core_inv_rms = nullptr;                  // [rows, value heads]
  float* o_out = nullptr;                         // out_proj's output
  BlockOutputActivations output;
  // Transient (plan_transient): made again from proj, core and core_inv_rms by the backward pass.
  float* conv_pre = nullptr;                           // [rows, conv channels] before the SiLU
  float* qkv = nullptr;                                // after it, q and k l2-normalised
  float *q_inv_norm = nullptr, *k_inv_norm = nullptr;  // [rows, key heads]
  float* gated = nullptr;                              // the gated norm's output
  std::vector<float> gate_values;  // silu(z), made only for a pass with hooks (analysis)
};

struct GatedDeltaNetScratch : BlockScratch {
  float *d_proj = nullptr, *d_qkv = nullptr, *d_g = nullptr, *d_beta = nullptr;
  float *d_core = nullptr, *d_gated = nullptr, *d_normed = nullptr;
  BlockOutputScratch output;
};

// Every sequence's last kernel - 1 convolution inputs and its delta rule state.
struct DeltaNetMemory : DecodeMemory {
  int sequences = 0;
  int64_t conv_size = 0, state_size = 0;  // per sequence
  float *conv = nullptr, *state = nullptr;
  Arena storage;
  void reset(int sequence) override;
  int64_t bytes() const override { return storage.bytes(); }
  // The convolution's and the recurrence's state: valid at exactly `to` (from is not used).
  void save(int sequence, int from, int to, std::vector<float>& out) const override;
  int64_t saved_floats(int, int) const override { return conv_size + state_size; }
  int64_t load(int sequence, int from, int to, int upto, const float* in) override;
  bool cuttable() const override { return false; }
};

// How the block's buffers look to its ops (forward and backward): the convolution over `sequences`
// sequences of `tokens` rows, and the delta rule over rows from row0 of q|k|v, g and beta.
ShortConvShape delta_net_conv_shape(const DeltaNetConfig& d, int sequences, int tokens);
DeltaRuleShape delta_rule_shape(const DeltaNetConfig& d, int sequences, int tokens);
DeltaRuleInputs<float> delta_rule_inputs(const DeltaNetConfig& d, const float* qkv, const float* g,
                                         const float* beta, int64_t row0);

class GatedDeltaNet final : public Block {
 public:
  GatedDeltaNet(const AttentionConfig& c, const AttentionParams& p, int layer)
      : c_(c), d_(c.delta_net), p_(p), layer_(layer) {}

  std::unique_ptr<BlockActivations> plan_activations(Arena& arena, int64_t rows) const override;
  void plan_transient(Arena& arena, int64_t rows, BlockActivations& a) const override;
  std::unique_ptr<BlockScratch> plan_scratch(Arena& arena, int64_t rows) const override;
  std::unique_ptr<DecodeMemory> make_decode_memory(int sequences, int capacity,
                                                   CacheDtype keys_values) const override;
  void forward(const PassContext& pass, BlockActivations& a, DecodeMemory* memory, const float* in,
               float* out) const override;
  void backward(const PassContext& pass, const BlockActivations& a, BlockScratch& s, Gradients& g,
                const float* in, float* d) const override;

  const AttentionConfig& config() const { return c_; }
  const AttentionParams& params() const { return p_; }
  int layer() const { return layer_; }

 private:
  void mix(const PassContext& pass, GatedDeltaNetActivations& a, DeltaNetMemory* memory) const;
  void conv_and_norms(const PassContext& pass, const GatedDeltaNetActivations& a) const;
  void normalize_qk(int64_t rows, const GatedDeltaNetActivations& a) const;
  void gated_norm(const PassContext& pass, GatedDeltaNetActivations& a) const;
  void show(const PassContext& pass, HookSite site, float* data, int cols) const;

  AttentionConfig c_;
  DeltaNetConfig d_;
  AttentionParams p_;
  int layer_;
};

}  // namespace gattn
