#include "train/backward_reduction.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace gattn {

BackwardReduction::BackwardReduction(const ParamLayout& layout, int64_t embedding_rows,
                                     int64_t hidden, std::vector<int32_t> late_rows,
                                     GradientTree& tree, Gradients& grads,
                                     OverlappedReduction& reduction)
    : embed_begin_(layout.embed),
      hidden_(hidden),
      embed_end_(layout.embed + embedding_rows * hidden),
      late_rows_(std::move(late_rows)),
      tree_(tree),
      count_(grads.size()),
      reduction_(reduction) {
  GATTN_ASSERT(count_ == layout.total(), "BackwardReduction: gradients of another layout");
}

void BackwardReduction::add_rest(int64_t begin, int64_t end, std::vector<ShardRange>& rest) const {
  int64_t at = begin;
  for (const ShardRange& done : handed_) {
    if (done.end <= at) continue;
    if (done.begin >= end) break;
    if (done.begin > at) rest.push_back({at, done.begin});
    at = std::max(at, done.end);
  }
  if (at < end) rest.push_back({at, end});
}

void BackwardReduction::hand_over(const std::vector<ShardRange>& ranges) {
  if (ranges.empty()) return;
  for (const ShardRange& r : ranges) tree_.add_last(r.begin, r.end);
  reduction_.ready(ranges);
  handed_.insert(handed_.end(), ranges.begin(), ranges.end());
  std::sort(handed_.begin(), handed_.end(),
            [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
}

void BackwardReduction::complete(int64_t begin, int64_t end) {
  GATTN_ASSERT(0 <= begin && begin <= end && end <= count_, "a completed range out of bounds");
  std::vector<ShardRange> rest;
  if (begin < embed_end_ && embed_begin_ < end) {  // the late rows wait for finish()
    add_rest(begin, std::max(begin, embed_begin_), rest);
    add_rest(std::min(end, embed_end_), end, rest);
    hand_over(rest);
    embedding_complete_but_ids();
    return;
  }
  add_rest(begin, end, rest);
  hand_over(rest);
}

void BackwardReduction::embedding_complete_but_ids() {
  std::vector<ShardRange> rest;  // the rows between the late ones, together
  int64_t at = embed_begin_;
  for (const int32_t row : late_rows_) {
    GATTN_ASSERT(0 <= row && embed_begin_ + (row + 1) * hidden_ <= embed_end_,
                 "a token id outside the embedding");
    add_rest(at, embed_begin_ + row * hidden_, rest);
    at = embed_begin_ + (row + 1) * hidden_;
  }
  add_rest(at, embed_end_, rest);
  hand_over(rest);
}

void BackwardReduction::finish() {
  std::vector<ShardRange> rest;
  add_rest(0, count_, rest);
  hand_over(rest);
  reduction_.finish();
  tree_.end_last();
}

std::vector<int32_t> last_micro_batch_ids(const int32_t* ids, int64_t tokens, int micro_batches,
                                          int world) {
  std::vector<int32_t> rows;
  const int per_rank = micro_batches / world;
  for (int r = 0; r < world; ++r) {
    const int32_t* first = ids + (int64_t(r) * per_rank + per_rank - 1) * tokens;
    rows.insert(rows.end(), first, first + tokens);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace gattn
