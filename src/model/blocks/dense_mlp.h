// The dense SwiGLU MLP block: out = in + down(silu(gate(x)) * up(x)), x = RMSNorm(in).
#pragma once
#include "model/block.h"
#include "model/blocks/block_output.h"
#include "model/blocks/swiglu_mlp.h"
#include "model/layer_config.h"
#include "model/layout.h"

namespace gattn {

struct DenseMlpActivations : BlockActivations {
  float *norm_rstd = nullptr, *normed = nullptr;  // post_attention_layernorm
  float *gate_up = nullptr, *act = nullptr, *down_out = nullptr;
  BlockOutputActivations output;
};

struct DenseMlpScratch : BlockScratch {
  float *d_normed = nullptr, *d_gate_up = nullptr, *d_act = nullptr;
  BlockOutputScratch output;
};

class DenseMlp final : public Block {
 public:
  DenseMlp(const MlpConfig& c, const MlpParams& p, int layer) : c_(c), p_(p), layer_(layer) {}

  std::unique_ptr<BlockActivations> plan_activations(Arena& arena, int64_t rows) const override;
  std::unique_ptr<BlockScratch> plan_scratch(Arena& arena, int64_t rows) const override;
  void forward(const PassContext& pass, BlockActivations& a, DecodeMemory* memory, const float* in,
               float* out) const override;
  void backward(const PassContext& pass, const BlockActivations& a, BlockScratch& s, Gradients& g,
                const float* in, float* d) const override;

 private:
  SwigluMlp mlp() const {
    return {p_.gate_up,
            p_.down,
            c_.hidden,
            c_.intermediate,
            "mlp gate/up projection",
            "swiglu",
            "mlp down projection"};
  }

  MlpConfig c_;
  MlpParams p_;
  int layer_;
};

}  // namespace gattn
