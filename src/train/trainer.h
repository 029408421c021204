// The training loop: gradient accumulation, clipping, AdamW on a schedule, periodic validation and
// checkpoints, JSONL metrics, a live progress line, and a clean stop on SIGINT/SIGTERM/SIGUSR1.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/communicator.h"
#include "train/run_config.h"
#include "util/log.h"

namespace gattn {

struct TrainOutcome {
  int64_t steps_done = 0;
  bool stopped_by_signal = false;
  bool stopped_by_callback = false;  // TrainSession::on_step returned false
  nlohmann::json summary;            // also written to <out>/summary.json when the run completes
};

struct TrainSession {
  // Continue from the newest checkpoint in run.out (bitwise as if uninterrupted, for the same
  // binary and thread count); its recorded run config must match but for run_config_changes'
  // free fields, unless allow_config_change (the changes are printed).
  bool resume = false;
  bool allow_config_change = false;
  // > 0: end the session after that step with a checkpoint, as a signal would (train in chunks).
  int64_t stop_at_step = 0;
  // Test hook (> 0): hold the run at that step until a stop signal arrives (at most 60 s), so a
  // test's signal always lands mid-run. The CLI takes it from GATTN_TEST_AWAIT_SIGNAL_AT_STEP.
  int64_t await_signal_at_step = 0;
  // Called after each step with its metrics record (step, loss, lr, grad_norm, tokens_per_s,
  // ...: what metrics.jsonl gets); false ends the session after that step with a checkpoint, as
  // stop_at_step does (the Python module's callback).
  std::function<bool(const nlohmann::json& record)> on_step = {};
  // The ranks of a data-parallel run (null: this process alone; train/communicator.h). Every
  // rank trains the same run; rank 0 alone evaluates and writes the checkpoints, metrics and
  // summary; a stop any rank receives is agreed after each step.
  Communicator* communicator = nullptr;
  // ZeRO-1: each rank keeps AdamW's moments of its shard of the parameters only, updates that
  // shard, and the weights are all-gathered (the same bits as unsharded). No effect on one rank.
  // `gattn train` sets it unless given --no-zero1.
  bool zero1 = false;
  // Ranks reduce the gradients while the backward pass goes on (train/backward_reduction.h), not
  // after it. The same bits either way; on cores that all compute, the transfer's own CPU work
  // makes it no faster (docs/SCALING.md). Metrics records of a data-parallel run carry
  // reduction_wait_s: the step's wait for the reduction after the pass.
  bool overlap_reduction = false;
};

// train()'s token_bytes for a run: the UTF-8 bytes of each id of its tokenizer, once its
// validation shard is checked to be that tokenizer's (an Error otherwise); empty without one.
std::vector<uint32_t> run_token_bytes(const RunConfig& run);

// Trains from scratch or resumes. token_bytes[id] (UTF-8 bytes of each token, from the tokenizer)
// enables bits per byte; empty disables it. Resuming a complete run writes nothing: its summary
// is read back (or, if the run was stopped before writing it, computed once). Progress lines and
// messages go to `log`.
TrainOutcome train(const RunConfig& run, const TrainSession& session,
                   const std::vector<uint32_t>& token_bytes, LogSink& log = discard_log());

}  // namespace gattn
