// gattn compare: finished runs side by side, scored again on the same validation windows so the
// difference between each run and the first comes with its paired standard error.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/paired.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "io/checkpoint.h"
#include "io/file.h"
#include "io/token_shard.h"
#include "model/model.h"
#include "train/evaluate.h"
#include "train/prepare_data.h"
#include "train/run_config.h"
#include "train/train_checkpoint.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

struct RunResult {
  std::string name;
  json summary, run_config;
  EvalResult eval;
};

json read_json(const std::string& path) {
  try {
    return json::parse(read_text_file(path));
  } catch (const json::exception& e) {
    fail(path, ": not valid JSON (", e.what(), ")");
  }
}

RunResult score(const std::string& run_dir, int64_t windows) {
  RunResult r;
  r.name = fs::path(run_dir).filename().string();
  const std::string summary_path = run_dir + "/summary.json";
  if (!fs::exists(summary_path)) fail(run_dir, ": no summary.json (has the run finished?)");
  r.summary = read_json(summary_path);
  const std::string checkpoint = latest_checkpoint(run_dir);
  if (checkpoint.empty()) fail(run_dir, ": no checkpoint");
  r.run_config = read_json(checkpoint + "/state.json").at("run_config");
  const json& data = r.run_config.at("data");
  const std::string val = data.at("val").get<std::string>();
  if (val.empty()) fail(run_dir, ": the run has no validation data");
  std::vector<float> params;
  Model model(load_model(checkpoint, params));
  model.params() = params;
  std::vector<uint32_t> token_bytes;
  const std::string tokenizer = data.at("tokenizer").get<std::string>();
  if (!tokenizer.empty()) token_bytes = token_byte_lengths(Tokenizer::load(tokenizer));
  const TokenShard shard(val);
  r.eval = evaluate(
      model, shard, data.at("seq_len").get<int>(),
      data.at("window").get<std::string>() == "bos" ? WindowKind::bos : WindowKind::plain, windows,
      r.run_config.at("batch_size").get<int>(), token_bytes.empty() ? nullptr : &token_bytes);
  return r;
}

void row(const char* label, const std::vector<RunResult>& runs,
         const std::function<std::string(const RunResult&)>& cell) {
  std::printf("  %-26s", label);
  for (const RunResult& r : runs) std::printf(" %16s", cell(r).c_str());
  std::printf("\n");
}

std::string number(double x, const char* format = "%.4f") {
  char text[64];
  std::snprintf(text, sizeof text, format, x);
  return text;
}
}  // namespace

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "Finished runs side by side, with paired differences");
  static std::vector<std::string> runs_dirs;
  static int64_t windows = 0;
  static int threads = 0;
  cmd->add_option("runs", runs_dirs, "run folders; the first is the reference")
      ->required()
      ->expected(2, 64);
  cmd->add_option("--windows", windows, "validation windows to score (0: all)");
  cmd->add_option("--threads", threads, "threads (default: all cores)");
  cmd->callback([] {
    if (threads > 0) set_num_threads(threads);
    std::vector<RunResult> runs;
    for (const std::string& dir : runs_dirs) runs.push_back(score(dir, windows));
    std::printf("\n");
    row("", runs, [](const RunResult& r) { return r.name; });
    row("gate", runs, [](const RunResult& r) {
      const std::string g = r.summary.at("gate").get<std::string>();
      return g.substr(0, g.find(' ', g.find(' ') + 1));
    });
    row("parameters", runs,
        [](const RunResult& r) { return with_commas(r.summary.at("parameters").get<int64_t>()); });
    row("training tokens", runs,
        [](const RunResult& r) { return with_commas(r.summary.at("tokens_seen").get<int64_t>()); });
    row("training time (s)", runs, [](const RunResult& r) {
      return number(r.summary.at("train_seconds").get<double>(), "%.0f");
    });
    row("training tokens/s", runs, [](const RunResult& r) {
      return number(r.summary.at("tokens_per_s").get<double>(), "%.0f");
    });
    row("final train loss", runs,
        [](const RunResult& r) { return number(r.summary.at("final_train_loss").get<double>()); });
    row("val loss (nats/token)", runs, [](const RunResult& r) { return number(r.eval.loss); });
    row("val perplexity", runs,
        [](const RunResult& r) { return number(r.eval.perplexity, "%.3f"); });
    if (runs[0].eval.bytes > 0)
      row("val bits per byte", runs,
          [](const RunResult& r) { return number(r.eval.bits_per_byte); });
    std::printf(
        "\n  validation: %lld windows of %d tokens, %lld target tokens, the same for every run\n",
        (long long)runs[0].eval.windows, runs[0].run_config.at("data").at("seq_len").get<int>(),
        (long long)runs[0].eval.tokens);
    for (size_t i = 1; i < runs.size(); ++i) {
      const PairedDifference d =
          paired_difference(runs[0].eval.window_loss, runs[i].eval.window_loss);
      std::printf("  %s - %s val loss: %+.4f +- %.4f (paired standard error over %d windows): %s\n",
                  runs[i].name.c_str(), runs[0].name.c_str(), d.mean, d.standard_error, d.n,
                  d.within_noise() ? "within the noise of the validation sample"
                                   : (d.mean < 0 ? "lower, beyond 2 standard errors"
                                                 : "higher, beyond 2 standard errors"));
    }
  });
}

}  // namespace gattn
