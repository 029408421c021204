#include "model/blocks/block_output.h"

#include "ops/elementwise.h"
#include "ops/rmsnorm.h"

namespace gattn {

void plan_block_output(Arena& arena, const BlockOutputConfig& c, int64_t rows,
                       const std::string& norm_name, BlockOutputActivations& a) {
  if (!c.sandwich_norm) return;
  arena.plan(&a.norm_rstd, rows, norm_name + " rstd");
  arena.plan(&a.normed, rows * c.hidden, norm_name + " output");
}

void plan_block_output_scratch(Arena& arena, const BlockOutputConfig& c, int64_t rows,
                               BlockOutputScratch& s) {
  if (c.clip > 0) arena.plan(&s.d_clipped, rows * c.hidden, "d block output");
  if (c.sandwich_norm) arena.plan(&s.d_normed, rows * c.hidden, "d block output normed");
}

void block_output_forward(const BlockOutputConfig& c, const Weights& w, int64_t norm_weight,
                          int rows, float* out, const float* in, const float* raw,
                          BlockOutputActivations& a) {
  const int C = c.hidden;
  const float* added = raw;
  if (c.sandwich_norm) {
    rmsnorm_forward(a.normed, a.norm_rstd, raw, w.at(norm_weight), {rows, 1, C, C, C, 0}, c.eps);
    added = a.normed;
  }
  residual_add(out, in, added, int64_t(rows) * C, c.clip);
}

float* block_output_backward(const BlockOutputConfig& c, const Weights& w, int64_t norm_weight,
                             int rows, float* d, const float* raw, const BlockOutputActivations& a,
                             const BlockOutputScratch& s, Gradients& g) {
  const int C = c.hidden;
  float* cur = d;
  if (c.clip > 0) {
    clip_backward(s.d_clipped, cur, c.sandwich_norm ? a.normed : raw, int64_t(rows) * C, c.clip);
    cur = s.d_clipped;
  }
  if (c.sandwich_norm) {
    rmsnorm_backward(s.d_normed, g.at(norm_weight), cur, raw, w.at(norm_weight), a.norm_rstd,
                     {rows, 1, C, C, C, 0}, false);
    cur = s.d_normed;
  }
  return cur;
}

}  // namespace gattn
