#include "train/evaluate.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/error.h"

namespace gattn {

EvalResult evaluate(TrainState& state, const TokenShard& shard, int seq_len, WindowKind window,
                    int64_t max_windows, int batch, const std::vector<uint32_t>* token_bytes) {
  DataLoader loader(shard, {batch, seq_len, window, 0, false});
  const int64_t windows = max_windows > 0 ? std::min(max_windows, loader.windows_per_epoch())
                                          : loader.windows_per_epoch();
  std::vector<int32_t> ids(int64_t(batch) * seq_len), targets(ids.size());
  std::vector<double> token_nats(ids.size());
  EvalResult r;
  double nats = 0;
  for (int64_t first = 0; first < windows; first += batch) {
    const int rows = int(std::min<int64_t>(batch, windows - first));
    loader.fill(first, rows, ids.data(), targets.data());
    const LossSum loss =
        state.forward({ids.data(), targets.data(), rows, seq_len}, nullptr, token_nats.data());
    nats += loss.nats;
    for (int row = 0; row < rows; ++row) {
      double sum = 0;
      int counted = 0;
      for (int t = 0; t < seq_len; ++t) {
        sum += token_nats[int64_t(row) * seq_len + t];
        counted += targets[int64_t(row) * seq_len + t] >= 0;
      }
      r.window_loss.push_back(sum / std::max(1, counted));
    }
    r.tokens += loss.tokens;
    if (token_bytes)
      for (int64_t i = 0; i < int64_t(rows) * seq_len; ++i)
        r.bytes += targets[i] >= 0 ? (*token_bytes)[targets[i]] : 0;
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
