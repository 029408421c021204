// What a backward pass tells its caller as it goes, so the gradient's reduction over the ranks of
// a data-parallel run can start while the pass goes on (issue 36; train/backward_reduction.h).
// The pass computes the LM head first, then the final norm, the blocks from the last to the first
// and the embedding's rows last; nothing here knows of ranks.
#pragma once
#include <cstdint>

namespace gattn {

class GradientReady {
 public:
  virtual ~GradientReady() = default;
  // The pass adds nothing more to the gradient of parameters [begin, end).
  virtual void complete(int64_t begin, int64_t end) = 0;
  // The pass adds nothing more to the embedding's gradient but to the rows of its token ids (the
  // embedding's backward adds those at the end, then calls complete() for the embedding).
  virtual void embedding_complete_but_ids() = 0;
};

}  // namespace gattn
