// The training loop: gradient accumulation, clipping, AdamW on a schedule, periodic validation and
// checkpoints, JSONL metrics, a live progress line, and a clean stop on SIGINT/SIGTERM.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/run_config.h"

namespace gattn {

struct TrainOutcome {
  int64_t steps_done = 0;
  bool stopped_by_signal = false;
  nlohmann::json summary;  // also written to <out>/summary.json when the run completes
};

// Trains from scratch, or from the newest checkpoint in run.out when resume is set (continuing
// bitwise as if uninterrupted, for the same binary and thread count). token_bytes[id] (UTF-8
// bytes of each token, from the tokenizer) enables bits per byte; empty disables it.
// stop_at_step > 0 ends the session after that step with a checkpoint, as a signal would
// (train in chunks; resume later).
TrainOutcome train(const RunConfig& run, bool resume, const std::vector<uint32_t>& token_bytes,
                   int64_t stop_at_step = 0);

}  // namespace gattn
