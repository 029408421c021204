// AdamW (Loshchilov & Hutter) with decoupled weight decay, in the same order of operations as
// torch.optim.AdamW, and global-norm gradient clipping.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/layout.h"
#include "model/weights.h"

namespace gattn {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  // Tensors whose name contains one of these are not decayed (norm weights, gate logits).
  std::vector<std::string> no_decay = {"norm", ".logit"};
};

class AdamW {
 public:
  AdamW(const ParamLayout& layout, const AdamWOptions& options);

  // One update of the weights with learning rate lr; increments steps(). Frozen tensors are
  // left as they are (no step, no decay; their moments stay zero).
  void step(Weights& weights, const Gradients& grads, double lr);

  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  AlignedFloats& first_moment() { return m_; }
  AlignedFloats& second_moment() { return v_; }
  bool decays(const TensorSpec& t) const;

 private:
  const ParamLayout& layout_;
  AdamWOptions options_;
  AlignedFloats m_, v_;
  int64_t steps_ = 0;
};

// Frozen tensors (TensorSpec::frozen) have no gradient: zeroed before the norm and the clip, as
// torch leaves a parameter without requires_grad out of clip_grad_norm_.
void zero_frozen_gradients(const ParamLayout& layout, Gradients& grads);
// The L2 norm of all gradients (accumulated in double, in a fixed order).
double global_norm(const Gradients& grads);
// Scales the gradients to norm max_norm when above it (as torch.nn.utils.clip_grad_norm_:
// coefficient max_norm / (norm + 1e-6), capped at 1). Returns the coefficient.
double clip_gradients(Gradients& grads, double norm, double max_norm);

}  // namespace gattn
