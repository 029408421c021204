// The gradients' reduction over the ranks of a data-parallel run, overlapped with the backward
// pass (issue 36): as the pass of a rank's last micro-batch completes a range of the gradient
// (model/gradient_ready.h), the range is folded into the block's tree (train/gradient_tree.h)
// and handed to the reduction (train/communicator.h), so the ranks exchange the LM head's and
// the later layers' gradients while the earlier layers' are computed. The embedding's gradient is
// complete early but for the rows of the pass's token ids: the rows of the ids of every rank's
// last micro-batch go last, so every rank hands over the same ranges in the same order, and the
// bits are those of reducing after the pass.
#pragma once
#include <cstdint>
#include <vector>

#include "model/gradient_ready.h"
#include "model/layout.h"
#include "train/communicator.h"
#include "train/gradient_tree.h"

namespace gattn {

class BackwardReduction final : public GradientReady {
 public:
  // `late_rows`: the embedding rows (token ids, sorted, unique) of every rank's last
  // micro-batch. `tree` folds the block's earlier micro-batches into `grads`.
  BackwardReduction(const ParamLayout& layout, int64_t embedding_rows, int64_t hidden,
                    std::vector<int32_t> late_rows, GradientTree& tree, Gradients& grads,
                    OverlappedReduction& reduction);

  void complete(int64_t begin, int64_t end) override;
  void embedding_complete_but_ids() override;

  // After the pass: hands over what it did not (the late rows), waits for the reduction, and
  // ends the tree's last micro-batch.
  void finish();

 private:
  // Adds the values of [begin, end) not handed over yet to `rest`.
  void add_rest(int64_t begin, int64_t end, std::vector<ShardRange>& rest) const;
  // Folds `ranges` and hands them over together.
  void hand_over(const std::vector<ShardRange>& ranges);

  const int64_t embed_begin_, hidden_, embed_end_;
  const std::vector<int32_t> late_rows_;
  GradientTree& tree_;
  const int64_t count_;
  OverlappedReduction& reduction_;
  std::vector<ShardRange> handed_;  // sorted, disjoint
};

// The token ids of each rank's last micro-batch of a step (M micro-batches of `tokens` ids each,
// rank r of N computes [r M/N, (r+1) M/N)), sorted and unique.
std::vector<int32_t> last_micro_batch_ids(const int32_t* ids, int64_t tokens, int micro_batches,
                                          int world);

}  // namespace gattn
