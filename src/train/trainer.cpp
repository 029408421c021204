#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/file.h"
#include "io/token_shard.h"
#include "model/model.h"
#include "ops/matmul.h"
#include "train/adamw.h"
#include "train/evaluate.h"
#include "train/loader.h"
#include "train/metrics_writer.h"
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
  }
  ~StopSignals() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  int received() const { return g_stop_signal; }

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
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
}  // namespace

TrainOutcome train(const RunConfig& run, bool resume, const std::vector<uint32_t>& token_bytes,
                   int64_t stop_at_step) {
  if (run.threads > 0) set_num_threads(run.threads);
  struct Bf16Scope {  // the run's GEMM precision, restored when training ends or throws
    explicit Bf16Scope(bool on) : before(bf16_gemm_inputs()) { set_bf16_gemm_inputs(on); }
    ~Bf16Scope() { set_bf16_gemm_inputs(before); }
    bool before;
  } bf16_scope(run.precision == GemmPrecision::bf16);
  const TokenShard train_shard(run.train_data);
  std::unique_ptr<TokenShard> val_shard;
  if (!run.val_data.empty()) val_shard = std::make_unique<TokenShard>(run.val_data);
  for (const TokenShard* shard : {&train_shard, static_cast<const TokenShard*>(val_shard.get())})
    if (shard && int64_t(shard->info().vocab_size) > run.model.vocab_size)
      fail(shard->path(), ": tokens go up to ", shard->info().vocab_size,
           " but the model's vocab_size is ", run.model.vocab_size);
  Model model(run.model);
  model.init(run.seed);
  AdamW optimizer(model.layout(), run.adamw);
  TrainingState state;
  const json run_json = run_config_to_json(run);
  fs::create_directories(run.out);
  if (resume) {
    const std::string latest = latest_checkpoint(run.out);
    if (latest.empty()) fail(run.out, ": --resume given but the run has no checkpoint");
    state = load_training_checkpoint(latest, model, optimizer);
    std::fprintf(stderr, "resumed from %s (step %lld)\n", latest.c_str(), (long long)state.step);
  } else if (!latest_checkpoint(run.out).empty()) {
    fail(run.out,
         ": holds checkpoints of an earlier run; pass --resume to continue it or choose another "
         "'out'");
  }
  const fs::path metrics_path = fs::path(run.out) / "metrics.jsonl";
  if (resume)
    truncate_metrics(metrics_path, state.step);
  else
    fs::remove(metrics_path);
  MetricsWriter metrics(metrics_path.string());

  DataLoader loader(train_shard, {run.batch_size, run.seq_len, run.window, run.seed, true});
  const int64_t rows_per_step = int64_t(run.batch_size) * run.grad_accum;
  std::vector<int32_t> ids(rows_per_step * run.seq_len), targets(ids.size());
  const bool live = ::isatty(STDERR_FILENO);
  StopSignals signals;
  TrainOutcome outcome;
  auto evaluate_now = [&] {
    return evaluate(model, *val_shard, run.seq_len, run.window, run.eval_windows, run.batch_size,
                    token_bytes.empty() ? nullptr : &token_bytes);
  };
  auto checkpoint_now = [&] {
    save_training_checkpoint(run.out, model, optimizer, state, run_json, run.keep_checkpoints);
  };

  const auto run_start = Clock::now();
  const int64_t first_step = state.step;
  double tokens_per_second = 0, last_loss = 0;
  for (; state.step < run.steps;) {
    const bool stop_here = stop_at_step > 0 && state.step >= stop_at_step;
    if (signals.received() || stop_here) {
      checkpoint_now();
      if (signals.received())
        std::fprintf(
            stderr,
            "%sstopped by signal %d at step %lld; checkpoint written, continue with --resume\n",
            live ? "\n" : "", signals.received(), (long long)state.step);
      outcome.stopped_by_signal = signals.received() != 0;
      outcome.steps_done = state.step;
      return outcome;
    }
    const auto t0 = Clock::now();
    loader.fill(state.step * rows_per_step, int(rows_per_step), ids.data(), targets.data());
    const double lr = run.schedule.lr(state.step);
    const StepResult result = optimizer_step(
        model, optimizer, {ids.data(), targets.data(), run.grad_accum, run.batch_size, run.seq_len},
        lr, run.grad_clip);
    const double mean_loss = result.loss, grad_norm = result.grad_norm;
    last_loss = mean_loss;
    const float max_hidden = model.max_abs_hidden();
    const bool finite = result.updated;
    if (!finite) {
      if (run.on_nonfinite == NonFinitePolicy::abort)
        fail("step ", state.step, ": non-finite loss (", mean_loss, ") or gradient norm (",
             grad_norm, "); on_nonfinite is 'abort'");
      ++state.skipped_steps;
    }
    ++state.step;
    state.tokens_seen += rows_per_step * run.seq_len;
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    tokens_per_second = double(rows_per_step * run.seq_len) / seconds;

    json record = {{"step", state.step},
                   {"loss", mean_loss},
                   {"lr", lr},
                   {"grad_norm", grad_norm},
                   {"tokens_per_s", tokens_per_second},
                   {"max_abs_hidden", max_hidden},
                   {"tokens_seen", state.tokens_seen}};
    if (!finite) record["skipped"] = "non-finite loss or gradient";
    const bool last = state.step == run.steps;
    if (val_shard && (last || (run.eval_every > 0 && state.step % run.eval_every == 0))) {
      const EvalResult r = evaluate_now();
      record.update(eval_json(r));
      if (last) outcome.summary = eval_json(r);
    }
    metrics.append(record.dump());

    const double elapsed = std::chrono::duration<double>(Clock::now() - run_start).count();
    const double eta = elapsed / double(state.step - first_step) * double(run.steps - state.step);
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | ETA %s%s",
                  (long long)state.step, (long long)run.steps, mean_loss, lr, tokens_per_second,
                  duration_text(eta).c_str(), finite ? "" : " | skipped (non-finite)");
    if (record.contains("val_loss")) {
      std::fprintf(stderr, "%s%s | val loss %.4f\n", live ? "\r\033[K" : "", line,
                   record["val_loss"].get<double>());
    } else if (live) {
      std::fprintf(stderr, "\r\033[K%s", line);
    } else if (state.step % 50 == 0 || state.step == first_step + 1) {
      std::fprintf(stderr, "%s\n", line);
    }
    if (last || (run.checkpoint_every > 0 && state.step % run.checkpoint_every == 0))
      checkpoint_now();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  outcome.steps_done = state.step;
  outcome.summary.update(
      {{"steps", state.step},
       {"tokens_seen", state.tokens_seen},
       {"skipped_steps", state.skipped_steps},
       {"parameters", model.layout().total()},
       {"train_seconds", seconds},
       {"tokens_per_s", double((state.step - first_step) * rows_per_step * run.seq_len) / seconds},
       {"gate", gate_description(run.model.gate)},
       {"final_train_loss", last_loss}});
  const std::string text = outcome.summary.dump(2) + "\n";
  write_text_file_atomically((fs::path(run.out) / "summary.json").string(), text);
  return outcome;
}

}  // namespace gattn
