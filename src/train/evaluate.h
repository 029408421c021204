// Held-out loss, perplexity and bits per byte of a model on a token shard.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/token_shard.h"
#include "model/train_state.h"
#include "train/communicator.h"
#include "train/loader.h"

namespace gattn {

struct EvalResult {
  double loss = 0;           // mean nats per target token
  double perplexity = 0;     // exp(loss)
  double bits_per_byte = 0;  // total nats / ln 2 / UTF-8 bytes of the target tokens; 0 if unknown
  int64_t windows = 0;
  int64_t tokens = 0;               // target tokens
  int64_t bytes = 0;                // UTF-8 bytes those tokens decode to (BOS counts 0)
  std::vector<double> window_loss;  // mean nats per target token of each window, in order
};

// Evaluates the first `max_windows` windows (0: all) of the shard in stream order, `batch` rows
// at a time. token_bytes[id], when given, is the number of UTF-8 bytes token id decodes to.
// With several ranks (every rank calls it), each evaluates a contiguous block of the batches and
// every rank gets the result, the batches' sums added in batch order: the one rank's bits.
EvalResult evaluate(TrainState& state, const TokenShard& shard, int seq_len, WindowKind window,
                    int64_t max_windows, int batch, const std::vector<uint32_t>* token_bytes,
                    Communicator& comm = local_communicator());

// A non-finite loss is a broken model (overflowing weights), never a result to print: fails with
// `what` (the checkpoint) and the first window whose loss is not finite.
void require_finite_loss(const EvalResult& result, const std::string& what);

}  // namespace gattn
