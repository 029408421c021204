// How a block's raw output joins the residual stream, shared by every block kind: an optional
// RMSNorm of it (sandwich norm, its own weight), an optional clamp, then the residual add.
#pragma once
#include <cstdint>
#include <string>

#include "model/arena.h"
#include "model/layer_config.h"
#include "model/weights.h"

namespace gattn {

struct BlockOutputActivations {
  float *norm_rstd = nullptr, *normed = nullptr;  // sandwich norm only
};
struct BlockOutputScratch {
  float *d_clipped = nullptr, *d_normed = nullptr;  // with a clamp; with a sandwich norm
};

// norm_name: the sandwich norm's name in the memory plan ("attn_output_norm").
void plan_block_output(Arena& arena, const BlockOutputConfig& c, int64_t rows,
                       const std::string& norm_name, BlockOutputActivations& a);
void plan_block_output_scratch(Arena& arena, const BlockOutputConfig& c, int64_t rows,
                               BlockOutputScratch& s);

// out = in + [clamp]([norm](raw)) over `rows` rows; norm_weight: the sandwich norm's offset.
void block_output_forward(const BlockOutputConfig& c, const Weights& w, int64_t norm_weight,
                          int rows, float* out, const float* in, const float* raw,
                          BlockOutputActivations& a);
// The gradient of the raw output from d = dL/d(out): d itself, or a scratch buffer. The
// residual's own share (dL/d(in) += d) stays in d.
float* block_output_backward(const BlockOutputConfig& c, const Weights& w, int64_t norm_weight,
                             int rows, float* d, const float* raw, const BlockOutputActivations& a,
                             const BlockOutputScratch& s, Gradients& g);

}  // namespace gattn
