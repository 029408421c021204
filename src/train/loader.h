// Training windows from a token shard, deterministic for a seed: the rows of any batch are a pure
// function of (seed, global row index), so a run resumes exactly from its step count and the rows
// split across data-parallel ranks without overlap.
#pragma once
#include <cstdint>
#include <vector>

#include "io/token_shard.h"

namespace gattn {

enum class WindowKind {
  bos,    // position 0 is the BOS token, then seq_len - 1 tokens of the stream; targets: seq_len
          // stream tokens (the first predicted from BOS alone). A fixed first token, as the paper's
          // sink analysis assumes.
  plain,  // seq_len consecutive stream tokens, targets shifted by one (nanoGPT style)
};

struct LoaderOptions {
  int batch = 1;  // rows per micro-batch
  int seq_len = 0;
  WindowKind window = WindowKind::bos;
  uint64_t seed = 0;
  bool shuffle = true;  // false: windows in stream order (evaluation)
};

class DataLoader {
 public:
  DataLoader(const TokenShard& shard, const LoaderOptions& options);

  // Non-overlapping windows of the stream; epoch e visits them in its own seeded permutation.
  int64_t windows_per_epoch() const { return windows_; }
  // Fills ids and targets [rows, seq_len] with global rows first_row .. first_row + rows - 1.
  void fill(int64_t first_row, int rows, int32_t* ids, int32_t* targets);

 private:
  int64_t window_of(int64_t row);
  const TokenShard& shard_;
  LoaderOptions options_;
  int64_t windows_ = 0;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;  // the permutation of the current epoch
};

}  // namespace gattn
