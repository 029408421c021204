#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "io/checkpoint.h"
#include "io/file.h"
#include "io/hf_weights.h"
#include "io/token_shard.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "train/adamw.h"
#include "train/evaluate.h"
#include "train/loader.h"
#include "train/metrics_writer.h"
#include "train/prepare_data.h"
#include "train/step.h"
#include "train/train_checkpoint.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/threads.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void request_stop(int signal) { g_stop_signal = signal; }

// Installs the stop handlers for the lifetime of a run and restores the previous ones after.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    previous_int_ = std::signal(SIGINT, request_stop);
    previous_term_ = std::signal(SIGTERM, request_stop);
    previous_usr1_ = std::signal(SIGUSR1, request_stop);  // what mpirun forwards to every rank
  }
  ~StopSignals() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
    std::signal(SIGUSR1, previous_usr1_);
  }
  int received() const { return g_stop_signal; }

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
  void (*previous_usr1_)(int);
};

std::string duration_text(double seconds) {
  char text[32];
  const int s = int(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%dh%02dm", s / 3600, s / 60 % 60);
  else
    std::snprintf(text, sizeof text, "%dm%02ds", s / 60, s % 60);
  return text;
}

json eval_json(const EvalResult& r) {
  json j = {{"val_loss", r.loss},
            {"val_perplexity", r.perplexity},
            {"val_windows", r.windows},
            {"val_tokens", r.tokens}};
  if (r.bytes > 0) j["val_bits_per_byte"] = r.bits_per_byte;
  return j;
}

// Keeps the records up to `step` (a resumed run rewrites what follows).
void truncate_metrics(const fs::path& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    try {
      if (parse_json_text(line, path.string()).at("step").get<int64_t>() <= step)
        kept += line + "\n";
    } catch (const std::exception&) {
      break;  // a torn last line from a crash
    }
  }
  write_text_file_atomically(path.string(), kept);
}

// One run from its first (or resumed) step to its last, in named steps.
class TrainingRun {
 public:
  TrainingRun(const RunConfig& run, const std::vector<uint32_t>& token_bytes, LogSink& log,
              Communicator& comm, bool zero1)
      : run_(run),
        log_(log),
        comm_(comm),
        token_bytes_(token_bytes),
        train_shard_(run.train_data),
        weights_(run.model),
        state_(weights_),
        optimizer_(weights_.layout(), run.adamw, optimizer_shard(zero1)),
        run_json_(run_config_to_json(run)),
        loader_(train_shard_, {run.batch_size, run.seq_len, run.window, run.seed, true}),
        rows_per_step_(int64_t(run.batch_size) * run.grad_accum),
        ids_(rows_per_step_ * run.seq_len),
        targets_(ids_.size()),
        live_(log.live()) {
    state_.set_exec({.precision = run.precision, .log = &log, .threads = run.threads});
    if (!run.val_data.empty()) val_shard_ = std::make_unique<TokenShard>(run.val_data);
    for (const TokenShard* shard :
         {&train_shard_, static_cast<const TokenShard*>(val_shard_.get())})
      if (shard && int64_t(shard->info().vocab_size) > run.model.vocab_size)
        fail(shard->path(), ": tokens go up to ", shard->info().vocab_size,
             " but the model's vocab_size is ", run.model.vocab_size);
    weights_.init(run.seed);
  }

  TrainOutcome run(const TrainSession& session);

 private:
  void start_or_resume(const TrainSession& session);
  void resume_from(const std::string& checkpoint, bool allow_config_change);
  TrainOutcome complete_run();
  json take_step();  // one optimizer step; returns its metrics record
  void report(const json& record);
  // Rank 0 writes what the run keeps (the ranks hold the same model).
  bool writes() const { return comm_.rank() == 0; }
  std::optional<ShardRange> optimizer_shard(bool zero1) const;
  void log_optimizer_memory() const;  // ZeRO-1: the moments' memory per rank
  void checkpoint();
  EvalResult evaluate_now() {
    return evaluate(state_, *val_shard_, run_.seq_len, run_.window, run_.eval_windows,
                    run_.batch_size, token_bytes_.empty() ? nullptr : &token_bytes_, comm_);
  }
  void await_test_signal(int64_t at_step);
  json summary(double seconds) const;

  const RunConfig& run_;
  LogSink& log_;
  Communicator& comm_;
  const std::vector<uint32_t>& token_bytes_;
  const TokenShard train_shard_;
  std::unique_ptr<TokenShard> val_shard_;
  Weights weights_;
  TrainState state_;
  AdamW optimizer_;
  TrainingProgress progress_;
  const json run_json_;
  DataLoader loader_;
  const int64_t rows_per_step_;
  std::vector<int32_t> ids_, targets_;
  const bool live_;  // progress lines redrawn in place: one every step
  std::optional<MetricsWriter> metrics_;
  StopSignals signals_;
  Clock::time_point start_;
  int64_t first_step_ = 0;
  double last_loss_ = 0;
  json final_eval_;
  bool overlap_reduction_ = false;  // TrainSession's
};

std::optional<ShardRange> TrainingRun::optimizer_shard(bool zero1) const {
  if (!zero1 || comm_.world() == 1) return std::nullopt;
  return shard_range(weights_.layout().total(), comm_.rank(), comm_.world());
}

void TrainingRun::log_optimizer_memory() const {
  if (!optimizer_.sharded()) return;
  const int64_t total = weights_.layout().total();
  int64_t largest = 0;
  for (int r = 0; r < comm_.world(); ++r)
    largest = std::max(largest, shard_range(total, r, comm_.world()).size());
  auto mib = [](int64_t floats) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", double(floats) * 4 / (1 << 20));
    return std::string(text);
  };
  log_.info("ZeRO-1: AdamW's two moments take at most ", mib(2 * largest), " on each of ",
            comm_.world(), " ranks (", mib(2 * total), " unsharded)");
}

// Under ZeRO-1 every rank sends rank 0 its shard of the moments first. The other ranks wait
// for the write (their watchdog allows a checkpoint more time than a step).
void TrainingRun::checkpoint() {
  if (!optimizer_.sharded()) {
    if (writes())
      save_training_checkpoint(run_.out, weights_, moments_of(optimizer_), progress_, run_json_,
                               run_.keep_checkpoints);
    comm_.checkpoint_written();
    return;
  }
  const int64_t total = weights_.layout().total();
  AlignedFloats first(size_t(writes() ? total : 0)), second(first.size());
  comm_.gather(optimizer_.first_moment().data(), first.data(), total, 0);
  comm_.gather(optimizer_.second_moment().data(), second.data(), total, 0);
  if (writes())
    save_training_checkpoint(run_.out, weights_, {first.data(), second.data(), optimizer_.steps()},
                             progress_, run_json_, run_.keep_checkpoints);
  comm_.checkpoint_written();
}

void TrainingRun::resume_from(const std::string& checkpoint, bool allow_config_change) {
  const ResumePoint point = load_training_checkpoint(checkpoint, weights_, optimizer_, run_.steps);
  progress_ = point.progress;
  const std::vector<std::string> changes = run_config_changes(point.run_config, run_json_);
  std::string list;
  for (const std::string& c : changes) list += "\n  " + c;
  if (!changes.empty() && !allow_config_change)
    fail(checkpoint,
         "/state.json: the run config differs from the one this run was started with "
         "in fields that change the training:",
         list, "\n(pass --allow-config-change to resume with the new values)");
  if (!changes.empty())
    log_.info("resuming with a changed run config (--allow-config-change):", list);
  const int64_t tokens = progress_.step * run_.tokens_per_step();
  if (changes.empty() && progress_.tokens_seen != tokens)
    fail(checkpoint, "/state.json: field 'tokens_seen' is ", progress_.tokens_seen, " but ",
         progress_.step, " steps of ", run_.tokens_per_step(), " tokens make ", tokens);
  log_.info("resumed from ", checkpoint, " (step ", progress_.step, ")");
}

void TrainingRun::start_or_resume(const TrainSession& session) {
  log_optimizer_memory();
  fs::create_directories(run_.out);
  const std::string latest = latest_checkpoint(run_.out);
  if (session.resume) {
    if (latest.empty()) fail(run_.out, ": --resume given but the run has no checkpoint");
    resume_from(latest, session.allow_config_change);
  } else if (!latest.empty()) {
    fail(run_.out,
         ": holds checkpoints of an earlier run; pass --resume to continue it or choose another "
         "'out'");
  } else if (!run_.init_from.empty()) {
    const std::string source = fs::exists(fs::path(run_.init_from) / "checkpoints")
                                   ? latest_checkpoint(run_.init_from)
                                   : run_.init_from;
    const std::vector<std::string> fresh = weights_.init_from(*load_any_model(source, log_));
    log_.info("weights from ", run_.init_from, "; ", fresh.size(),
              " tensor(s) it lacks start fresh", fresh.empty() ? "" : ", e.g. ",
              fresh.empty() ? "" : fresh[0]);
  }
  const fs::path metrics_path = fs::path(run_.out) / "metrics.jsonl";
  if (writes()) {
    if (session.resume)
      truncate_metrics(metrics_path, progress_.step);
    else
      fs::remove(metrics_path);
    metrics_.emplace(metrics_path.string());
  }
  first_step_ = progress_.step;
  start_ = Clock::now();
}

json TrainingRun::take_step() {
  const auto t0 = Clock::now();
  loader_.fill(progress_.step * rows_per_step_, int(rows_per_step_), ids_.data(), targets_.data());
  const double lr = run_.schedule.lr(progress_.step);
  const StepResult result =
      optimizer_step(weights_, state_, optimizer_,
                     {ids_.data(), targets_.data(), run_.grad_accum, run_.batch_size, run_.seq_len},
                     lr, run_.grad_clip, run_.router_loss, comm_, overlap_reduction_);
  last_loss_ = result.loss;
  if (!result.updated) {
    if (run_.on_nonfinite == NonFinitePolicy::abort)
      fail("step ", progress_.step, ": non-finite loss (", result.loss, ") or gradient norm (",
           result.grad_norm, "); on_nonfinite is 'abort'");
    ++progress_.skipped_steps;
  }
  ++progress_.step;
  progress_.tokens_seen += rows_per_step_ * run_.seq_len;
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  comm_.step_done(progress_.step, seconds);
  json record = {{"step", progress_.step},
                 {"loss", result.loss},
                 {"lr", lr},
                 {"grad_norm", result.grad_norm},
                 {"tokens_per_s", double(rows_per_step_ * run_.seq_len) / seconds},
                 {"max_abs_hidden", float(result.max_abs_hidden)},
                 {"tokens_seen", progress_.tokens_seen}};
  if (weights_.config().has_moe_layers()) record["router_aux_loss"] = result.router_aux_loss;
  if (comm_.world() > 1) record["reduction_wait_s"] = result.reduction_wait_s;
  if (!result.updated) record["skipped"] = "non-finite loss or gradient";
  const bool last = progress_.step == run_.steps;
  if (val_shard_ && (last || (run_.eval_every > 0 && progress_.step % run_.eval_every == 0))) {
    const json eval = eval_json(evaluate_now());
    record.update(eval);
    if (last) final_eval_ = eval;
  }
  return record;
}

// The progress line: live on a terminal, every 50 steps in a log, always with a validation loss.
void TrainingRun::report(const json& record) {
  const int64_t step = progress_.step;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double eta = elapsed / double(step - first_step_) * double(run_.steps - step);
  char line[256];
  std::snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | ETA %s%s",
                (long long)step, (long long)run_.steps, record["loss"].get<double>(),
                record["lr"].get<double>(), record["tokens_per_s"].get<double>(),
                duration_text(eta).c_str(),
                record.contains("skipped") ? " | skipped (non-finite)" : "");
  if (record.contains("val_loss")) {
    char val[64];
    std::snprintf(val, sizeof val, " | val loss %.4f", record["val_loss"].get<double>());
    log_.info(line, val);
  } else if (live_) {
    log_.write(LogLevel::progress, line);
  } else if (step % 50 == 0 || step == first_step_ + 1) {
    log_.info(line);
  }
}

// Test hook (TrainSession::await_signal_at_step): holds the run at that step until a stop signal
// arrives, so a test's signal always lands mid-run (at most 60 s, then it fails).
void TrainingRun::await_test_signal(int64_t at_step) {
  if (at_step <= 0 || progress_.step != at_step) return;
  log_.info("waiting for a signal at step ", progress_.step);
  for (int i = 0; i < 60000 && !signals_.received(); ++i) ::usleep(1000);
  if (!signals_.received()) fail("await_signal_at_step ", at_step, ": no signal within 60 s");
}

json TrainingRun::summary(double seconds) const {
  json s = final_eval_.is_null() ? json::object() : final_eval_;
  s.update(
      {{"steps", progress_.step},
       {"tokens_seen", progress_.tokens_seen},
       {"skipped_steps", progress_.skipped_steps},
       {"parameters", weights_.layout().total()},
       {"train_seconds", seconds > 0 ? json(seconds) : json(nullptr)},
       {"tokens_per_s",
        seconds > 0
            ? json(double((progress_.step - first_step_) * rows_per_step_ * run_.seq_len) / seconds)
            : json(nullptr)},
       {"gate", gate_description(run_.model.gate)},
       {"final_train_loss", last_loss_}});
  return s;
}

// The training loss of the metrics record of `step`, or NaN without one.
double recorded_loss(const fs::path& metrics, int64_t step) {
  std::ifstream in(metrics);
  std::string line;
  double loss = std::nan("");
  while (std::getline(in, line)) {
    const json record = parse_json_text(line, metrics.string());
    if (record.value("step", int64_t(-1)) == step) loss = record.value("loss", loss);
  }
  return loss;
}

TrainOutcome TrainingRun::complete_run() {
  const fs::path summary_path = fs::path(run_.out) / "summary.json";
  TrainOutcome outcome;
  outcome.steps_done = progress_.step;
  log_.info("the run is already complete (step ", progress_.step, " of ", run_.steps, ")");
  if (fs::exists(summary_path)) {
    outcome.summary = parse_json_file(summary_path.string());
    return outcome;
  }
  // Stopped between its last checkpoint and its summary: the final evaluation once more.
  last_loss_ = recorded_loss(fs::path(run_.out) / "metrics.jsonl", progress_.step);
  if (val_shard_) final_eval_ = eval_json(evaluate_now());
  outcome.summary = summary(0);
  if (writes()) write_text_file_atomically(summary_path.string(), outcome.summary.dump(2) + "\n");
  return outcome;
}

TrainOutcome TrainingRun::run(const TrainSession& session) {
  overlap_reduction_ = session.overlap_reduction;
  start_or_resume(session);
  if (session.resume && progress_.step == run_.steps) return complete_run();
  const int64_t stop_at_step = session.stop_at_step;
  TrainOutcome outcome;
  while (progress_.step < run_.steps) {
    await_test_signal(session.await_signal_at_step);
    const int64_t signal = comm_.all_max(signals_.received());  // one rank's stop stops all
    if (signal != 0 || (stop_at_step > 0 && progress_.step >= stop_at_step)) {
      checkpoint();
      if (signal != 0)
        log_.info("stopped by signal ", signal, " at step ", progress_.step,
                  "; checkpoint written, continue with --resume");
      outcome.stopped_by_signal = signal != 0;
      outcome.steps_done = progress_.step;
      return outcome;
    }
    const json record = take_step();
    if (writes()) {
      metrics_->append(record.dump());
      report(record);
    }
    const bool go_on = !session.on_step || session.on_step(record);
    if (progress_.step == run_.steps || !go_on ||
        (run_.checkpoint_every > 0 && progress_.step % run_.checkpoint_every == 0))
      checkpoint();
    if (!go_on && progress_.step < run_.steps) {
      outcome.stopped_by_callback = true;
      outcome.steps_done = progress_.step;
      return outcome;
    }
  }
  outcome.steps_done = progress_.step;
  outcome.summary = summary(std::chrono::duration<double>(Clock::now() - start_).count());
  if (writes())
    write_text_file_atomically((fs::path(run_.out) / "summary.json").string(),
                               outcome.summary.dump(2) + "\n");
  return outcome;
}
}  // namespace

std::vector<uint32_t> run_token_bytes(const RunConfig& run) {
  if (run.tokenizer.empty()) return {};
  const Tokenizer tokenizer = Tokenizer::load(run.tokenizer);
  if (!run.val_data.empty())
    require_shard_tokenizer(TokenShard(run.val_data), tokenizer, run.tokenizer);
  return token_byte_lengths(tokenizer);
}

TrainOutcome train(const RunConfig& run, const TrainSession& session,
                   const std::vector<uint32_t>& token_bytes, LogSink& log) {
  if (run.threads > available_cores())
    log.info("gattn: ", run.threads, " threads requested, using ", available_cores(),
             " (the cores this process may use)");
  const ThreadScope threads(run.threads);
  Communicator& comm = session.communicator ? *session.communicator : local_communicator();
  return TrainingRun(run, token_bytes, log, comm, session.zero1).run(session);
}

}  // namespace gattn
