// Micro-batch gradients combined in the canonical order (issue 36): each micro-batch's gradient
// is computed from zero, and the gradients of a step combine as a balanced binary tree over
// micro-batch indices, ((g0 + g1) + (g2 + g3)) for four. Ranks of a data-parallel run each
// combine their block of micro-batches so and the communicator adds the blocks' sums in the same
// tree (train/communicator.h), so a run gives the same bits at any rank count. One micro-batch
// costs nothing: its gradient stays where the backward pass put it.
#pragma once
#include <memory>
#include <vector>

#include "model/weights.h"

namespace gattn {

class GradientTree {
 public:
  // `grads` (zero) is where each micro-batch's backward pass accumulates.
  explicit GradientTree(Gradients& grads) : grads_(grads) {}

  // `grads` holds the next micro-batch's gradient: folds it into the tree. Not last: `grads` is
  // zero afterwards, ready for the next one. Last: `grads` holds the combined gradient (a count
  // that is not a power of two folds the pending sub-trees into it, the latest first).
  void add(bool last);

  // add(true) a range at a time (the overlapped reduction: train/backward_reduction.h): `grads`
  // [begin, end) holds the last micro-batch's gradient there and gets the combined gradient.
  // The same bits as add(true) once every value is folded; then end_last().
  void add_last(int64_t begin, int64_t end);
  void end_last();

 private:
  // grads_ += pending_[level]; the level's buffer becomes a spare.
  void fold(size_t level);

  Gradients& grads_;
  std::vector<std::unique_ptr<Gradients>> pending_;  // [level]: a sum of 2^level gradients
  std::vector<std::unique_ptr<Gradients>> spare_;
};

}  // namespace gattn
