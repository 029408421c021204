// gattn train: train a model from a run config (docs/TRAINING.md).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "cli/commands.h"
#include "cli/stderr_log.h"
#include "train/mpi_communicator.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace gattn {

namespace {
// The test hooks a test sets in the environment of the gattn binary (TrainSession; the
// watchdog's least limit, 60 s otherwise).
int64_t await_signal_at_step() {
  const char* at = std::getenv("GATTN_TEST_AWAIT_SIGNAL_AT_STEP");
  return at ? std::atoll(at) : 0;
}
CollectiveWatchdog::Options watchdog_options() {
  CollectiveWatchdog::Options options;
  if (const char* seconds = std::getenv("GATTN_TEST_WATCHDOG_SECONDS"))
    options.min_seconds = std::max(1.0, std::atof(seconds));
  return options;
}

// Trains as one process, or as one rank of a job mpirun started (docs/SCALING.md): rank 0
// reports and prints the summary; a rank that fails ends the job.
void run_training(const RunConfig& run, TrainSession session) {
  const std::vector<uint32_t> token_bytes = run_token_bytes(run);
  if (launched_world_size() == 1) {
    const TrainOutcome outcome = train(run, session, token_bytes, stderr_log());
    if (!outcome.stopped_by_signal && outcome.steps_done == run.steps)
      std::printf("%s\n", outcome.summary.dump(2).c_str());
    return;
  }
  const std::unique_ptr<Communicator> ranks = mpi_communicator(stderr_log(), watchdog_options());
  session.communicator = ranks.get();
  const bool first = ranks->rank() == 0;
  try {
    const TrainOutcome outcome =
        train(run, session, token_bytes, first ? stderr_log() : discard_log());
    if (first && !outcome.stopped_by_signal && outcome.steps_done == run.steps)
      std::printf("%s\n", outcome.summary.dump(2).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gattn: error: rank %d of %d: %s\n", ranks->rank(), ranks->world(),
                 e.what());
    std::fflush(nullptr);
    abort_all_ranks(1);
  }
}
}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model from a run config");
  static std::string config_path, gate, out, init_from;
  static bool resume = false, allow_config_change = false, zero1 = true, overlap_reduction = false;
  static int64_t stop_at = 0, seed = -1;
  cmd->add_option("--config", config_path, "run config JSON")->required();
  cmd->add_option("--gate", gate, "gate object replacing the model's");
  cmd->add_option("--out", out, "run folder replacing the config's 'out'");
  cmd->add_option("--seed", seed, "seed replacing the config's (initialisation and data order)");
  cmd->add_flag("--resume", resume, "continue from the run's newest checkpoint");
  cmd->add_flag("--allow-config-change", allow_config_change,
                "resume although run-config fields that change the training differ (listed)");
  cmd->add_option("--init-from", init_from,
                  "start from this model's weights (fine-tuning; a gate it lacks is retrofitted)");
  cmd->add_flag("--zero1,!--no-zero1", zero1,
                "data-parallel ranks shard AdamW's state (ZeRO-1, the default; docs/SCALING.md); "
                "--no-zero1: each keeps all of it; same bits");
  cmd->add_flag("--overlap-reduction", overlap_reduction,
                "data-parallel ranks reduce the gradients while the backward pass runs, not after "
                "it (where the link moves bytes without the cores; docs/SCALING.md); same bits");
  cmd->add_option("--stop-at-step", stop_at,
                  "end this session after that step (with a checkpoint)");
  cmd->callback([] {
    RunConfig run = load_run_config(config_path, gate);
    if (!out.empty()) run.out = out;
    if (seed >= 0) run.seed = uint64_t(seed);
    if (!init_from.empty()) run.init_from = init_from;
    run_training(run, {.resume = resume,
                       .allow_config_change = allow_config_change,
                       .stop_at_step = stop_at,
                       .await_signal_at_step = await_signal_at_step(),
                       .zero1 = zero1,
                       .overlap_reduction = overlap_reduction});
  });
}

}  // namespace gattn
