#include "train/evaluate.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/error.h"

namespace gattn {

namespace {

// One batch's sums, packed as doubles to cross ranks: nats, target tokens, bytes, then the mean
// nats of each of `batch` windows (NaN past the batch's rows). Counts are exact below 2^53.
int64_t batch_sums_width(int batch) { return 3 + int64_t(batch); }

// The sums of the batch of `rows` windows from window `first` into `out` (batch_sums_width).
void evaluate_batch(TrainState& state, DataLoader& loader, int64_t first, int rows, int batch,
                    int seq_len, const std::vector<uint32_t>* token_bytes, double* out) {
  std::vector<int32_t> ids(int64_t(batch) * seq_len), targets(ids.size());
  std::vector<double> token_nats(ids.size());
  loader.fill(first, rows, ids.data(), targets.data());
  const LossSum loss =
      state.forward({ids.data(), targets.data(), rows, seq_len}, nullptr, token_nats.data());
  int64_t bytes = 0;
  if (token_bytes)
    for (int64_t i = 0; i < int64_t(rows) * seq_len; ++i)
      bytes += targets[i] >= 0 ? (*token_bytes)[targets[i]] : 0;
  out[0] = loss.nats;
  out[1] = double(loss.tokens);
  out[2] = double(bytes);
  for (int row = 0; row < batch; ++row) {
    double sum = 0;
    int counted = 0;
    for (int t = 0; row < rows && t < seq_len; ++t) {
      sum += token_nats[int64_t(row) * seq_len + t];
      counted += targets[int64_t(row) * seq_len + t] >= 0;
    }
    out[3 + row] = row < rows ? sum / std::max(1, counted) : std::nan("");
  }
}

}  // namespace

EvalResult evaluate(TrainState& state, const TokenShard& shard, int seq_len, WindowKind window,
                    int64_t max_windows, int batch, const std::vector<uint32_t>* token_bytes,
                    Communicator& comm) {
  DataLoader loader(shard, {batch, seq_len, window, 0, false});
  const int64_t windows = max_windows > 0 ? std::min(max_windows, loader.windows_per_epoch())
                                          : loader.windows_per_epoch();
  const int64_t batches = (windows + batch - 1) / batch, world = comm.world();
  // Rank r evaluates batches [first_of(r), first_of(r + 1)); every rank sends as many slots as
  // the largest block, so the gathered slots are in batch order with gaps.
  auto first_of = [&](int64_t rank) { return batches * rank / world; };
  auto rows_of = [&](int64_t b) { return int(std::min<int64_t>(batch, windows - b * batch)); };
  const int64_t slots = (batches + world - 1) / world, width = batch_sums_width(batch);
  const int64_t begin = first_of(comm.rank());
  std::vector<double> mine(size_t(slots * width), std::nan(""));
  for (int64_t b = begin; b < first_of(comm.rank() + 1); ++b)
    evaluate_batch(state, loader, b * batch, rows_of(b), batch, seq_len, token_bytes,
                   mine.data() + (b - begin) * width);
  const std::vector<double> all = world == 1 ? std::move(mine) : comm.all_gather(mine);
  EvalResult r;
  double nats = 0;
  for (int64_t rank = 0; rank < world; ++rank)
    for (int64_t b = first_of(rank); b < first_of(rank + 1); ++b) {
      const double* sums = all.data() + (rank * slots + b - first_of(rank)) * width;
      nats += sums[0];
      r.tokens += int64_t(sums[1]);
      r.bytes += int64_t(sums[2]);
      r.window_loss.insert(r.window_loss.end(), sums + 3, sums + 3 + rows_of(b));
    }
  r.windows = windows;
  r.loss = nats / double(r.tokens);
  r.perplexity = std::exp(r.loss);
  r.bits_per_byte = r.bytes > 0 ? nats / std::numbers::ln2 / double(r.bytes) : 0;
  return r;
}

void require_finite_loss(const EvalResult& result, const std::string& what) {
  if (std::isfinite(result.loss)) return;
  const auto bad = std::find_if(result.window_loss.begin(), result.window_loss.end(),
                                [](double loss) { return !std::isfinite(loss); });
  if (bad == result.window_loss.end()) fail(what, ": the loss is not finite (", result.loss, ")");
  fail(what, ": the loss is not finite (", result.loss,
       "); the first window with a non-finite loss is window ", bad - result.window_loss.begin(),
       " (", *bad, " nats/token): do the weights overflow?");
}

}  // namespace gattn
