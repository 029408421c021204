// The mixture-of-experts MLP block (Qwen3-Next, Qwen3.5-MoE; the paper's 15A2B without a shared
// expert): x = RMSNorm(in); the router's softmax picks k experts per token (ops/moe_routing.h);
// out = in + sum_j weight_j expert_j(x) + sigmoid(x . shared_gate) shared_expert(x), every expert
// a SwiGLU MLP. Tokens are grouped by expert and each expert runs one GEMM over its tokens, in
// expert order: a decode step reads only the experts its tokens chose, and the sums do not depend
// on the batch's thread count beyond the GEMMs' own.
#pragma once
#include "model/block.h"
#include "model/blocks/block_output.h"
#include "model/blocks/swiglu_mlp.h"
#include "model/hooks.h"
#include "model/layer_config.h"
#include "model/layout.h"
#include "ops/moe_routing.h"

namespace gattn {

struct MoeMlpActivations : BlockActivations {
  float *norm_rstd = nullptr, *normed = nullptr;                        // post_attention_layernorm
  float *router_logits = nullptr, *probs = nullptr, *weight = nullptr;  // [N, E], [N, E], [N, k]
  // Per (token, choice) row, grouped by expert: the gathered inputs (transient), the gate/up
  // projection, the SwiGLU and the expert's output before its weight.
  float *gathered = nullptr, *gate_up = nullptr, *act = nullptr, *expert_out = nullptr;
  float *shared_gate_up = nullptr, *shared_act = nullptr, *shared_out = nullptr;
  float* shared_logit = nullptr;          // [N]: x . shared_gate
  float* moe_out = nullptr;               // [N, C]: the block's raw output
  std::vector<int32_t> choice;            // [N, k]
  std::vector<float> shared_gate_scores;  // [N]: what hooks see (only passes with hooks)
  ExpertGroups groups;
  BlockOutputActivations output;
};

struct MoeMlpScratch : BlockScratch {
  float *d_normed = nullptr, *d_weight = nullptr, *d_logits = nullptr, *d_probs = nullptr;
  float *d_rows = nullptr, *d_gate_up = nullptr, *d_act = nullptr, *gathered = nullptr;
  float *d_shared_out = nullptr, *d_shared_gate_up = nullptr, *d_shared_act = nullptr;
  float* d_shared_logit = nullptr;
  BlockOutputScratch output;
};

class MoeMlp final : public Block {
 public:
  MoeMlp(const MlpConfig& c, const MlpParams& p, int layer) : c_(c), p_(p), layer_(layer) {}

  std::unique_ptr<BlockActivations> plan_activations(Arena& arena, int64_t rows) const override;
  void plan_transient(Arena& arena, int64_t rows, BlockActivations& a) const override;
  std::unique_ptr<BlockScratch> plan_scratch(Arena& arena, int64_t rows) const override;
  void forward(const PassContext& pass, BlockActivations& a, DecodeMemory* memory, const float* in,
               float* out) const override;
  void backward(const PassContext& pass, const BlockActivations& a, BlockScratch& s, Gradients& g,
                const float* in, float* d) const override;

 private:
  RouteShape route_shape(int rows) const {
    return {
        .rows = rows, .experts = c_.moe.experts, .k = c_.moe.top_k, .norm_topk = c_.moe.norm_topk};
  }
  void experts_forward(const PassContext& pass, MoeMlpActivations& a) const;
  void shared_forward(const PassContext& pass, MoeMlpActivations& a) const;
  void experts_backward(const PassContext& pass, const MoeMlpActivations& a, MoeMlpScratch& s,
                        Gradients& g, const float* d_out) const;
  void shared_backward(const PassContext& pass, const MoeMlpActivations& a, MoeMlpScratch& s,
                       Gradients& g, const float* d_out) const;

  void show(const PassContext& pass, HookSite site, float* data, int cols) const;
  SwigluMlp expert(int e) const {
    return {p_.experts + e * p_.expert_stride,
            p_.expert_down(e),
            c_.hidden,
            c_.moe.expert_intermediate,
            "experts' gate/up projection",
            "experts' swiglu",
            "experts' down projection"};
  }
  SwigluMlp shared_expert() const {
    return {p_.shared_gate_up, p_.shared_down,  c_.hidden,      c_.moe.shared_intermediate,
            "shared expert",   "shared expert", "shared expert"};
  }

  MlpConfig c_;
  MlpParams p_;
  int layer_;
};

}  // namespace gattn
