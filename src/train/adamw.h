// AdamW (Loshchilov & Hutter) with decoupled weight decay, in the same order of operations as
// torch.optim.AdamW, and global-norm gradient clipping.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/layout.h"
#include "model/weights.h"
#include "train/communicator.h"

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
  // `shard`: the parameters [begin, end) this optimizer updates and keeps moments of (a rank's
  // share under ZeRO-1, train/communicator.h); none: all of them.
  AdamW(const ParamLayout& layout, const AdamWOptions& options,
        std::optional<ShardRange> shard = std::nullopt);

  // One update of the weights (those of the shard) with learning rate lr; increments steps().
  // Frozen tensors are left as they are (no step, no decay; their moments stay zero). Every
  // value's update is the same whatever the shard.
  void step(Weights& weights, const Gradients& grads, double lr);

  // The moments' values [shard().begin, shard().end) of the layout.
  const ShardRange& shard() const { return shard_; }
  bool sharded() const { return shard_.size() != layout_.total(); }

  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  AlignedFloats& first_moment() { return m_; }
  AlignedFloats& second_moment() { return v_; }
  const AlignedFloats& first_moment() const { return m_; }
  const AlignedFloats& second_moment() const { return v_; }
  bool decays(const TensorSpec& t) const;

 private:
  const ParamLayout& layout_;
  AdamWOptions options_;
  ShardRange shard_;
  AlignedFloats m_, v_;
  int64_t steps_ = 0;
};

// Frozen tensors (TensorSpec::frozen) have no gradient: zeroed before the norm and the clip, as
// torch leaves a parameter without requires_grad out of clip_grad_norm_.
void zero_frozen_gradients(const ParamLayout& layout, Gradients& grads);
// The squares of values [0, count) summed in double over chunks of kNormChunk values
// (train/communicator.h), each chunk in order: one sum per chunk.
std::vector<double> chunk_square_sums(const float* values, int64_t count);
// The square root of the chunk sums added in chunk order.
double norm_of_chunk_sums(const std::vector<double>& sums);
// The L2 norm of all gradients: the two above, so any thread count and any sharding on chunk
// boundaries gives the same bits.
double global_norm(const Gradients& grads);
// Scales the gradients to norm max_norm when above it (as torch.nn.utils.clip_grad_norm_:
// coefficient max_norm / (norm + 1e-6), capped at 1). Returns the coefficient.
double clip_gradients(Gradients& grads, double norm, double max_norm);

}  // namespace gattn
