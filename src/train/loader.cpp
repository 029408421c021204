#include "train/loader.h"

#include <numeric>

#include "util/error.h"
#include "util/splitmix64.h"

namespace gattn {

DataLoader::DataLoader(const TokenShard& shard, const LoaderOptions& options)
    : shard_(shard), options_(options) {
  if (options.seq_len < 2) fail("sequence length must be at least 2, got ", options.seq_len);
  const int64_t tokens = int64_t(shard.info().tokens);
  // bos windows use seq_len stream tokens each; plain windows seq_len + 1 (sharing one).
  windows_ =
      options.window == WindowKind::bos ? tokens / options.seq_len : (tokens - 1) / options.seq_len;
  if (windows_ < 1)
    fail(shard.path(), ": ", tokens, " tokens are too few for one window of ", options.seq_len);
}

int64_t DataLoader::window_of(int64_t row) {
  GATTN_ASSERT(row >= 0, "data row ", row, " is negative");
  const int64_t epoch = row / windows_, index = row % windows_;
  if (!options_.shuffle) return index;
  if (epoch != epoch_) {  // Fisher-Yates keyed by (seed, epoch)
    order_.resize(windows_);
    std::iota(order_.begin(), order_.end(), 0);
    const uint64_t key = splitmix64(splitmix64(options_.seed) ^ uint64_t(epoch));
    for (int64_t i = windows_ - 1; i > 0; --i)
      std::swap(order_[i], order_[splitmix64(key + uint64_t(i)) % uint64_t(i + 1)]);
    epoch_ = epoch;
  }
  return order_[index];
}

void DataLoader::fill(int64_t first_row, int rows, int32_t* ids, int32_t* targets) {
  const int T = options_.seq_len;
  for (int r = 0; r < rows; ++r) {
    const uint64_t start = uint64_t(window_of(first_row + r)) * T;
    int32_t* row_ids = ids + int64_t(r) * T;
    int32_t* row_targets = targets + int64_t(r) * T;
    if (options_.window == WindowKind::bos) {
      row_ids[0] = int32_t(shard_.info().bos_id);
      shard_.read(start, T - 1, row_ids + 1);
      shard_.read(start, T, row_targets);
    } else {
      shard_.read(start, T, row_ids);
      shard_.read(start + 1, T, row_targets);
    }
  }
}

}  // namespace gattn
