// gattn compare: a baseline and a candidate model (one run per seed each, paired by seed) side by
// side, every run scored again on the same validation windows, with the differences judged
// against the validation-sample noise and the seed-to-seed noise measured in these runs.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "analysis/analyze.h"
#include "analysis/compare_report.h"
#include "analysis/paired.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/inputs.h"
#include "cli/validators.h"
#include "io/checkpoint.h"
#include "io/file.h"
#include "io/token_shard.h"
#include "model/train_state.h"
#include "train/evaluate.h"
#include "train/prepare_data.h"
#include "train/train_checkpoint.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/threads.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

struct RunResult {
  std::string name;
  json summary, run_config;
  EvalResult eval;
  AnalysisResult analysis;  // analysis/analyze.h on the first validation windows
};

json read_json(const std::string& path) { return parse_json_file(path); }

// Scores a finished run's final checkpoint on its validation shard (with every head's attention
// map when `maps`, for the HTML report).
RunResult score(const std::string& run_dir, int64_t windows, bool maps) {
  RunResult r;
  r.name = fs::path(run_dir).filename().string();
  if (!fs::exists(run_dir + "/summary.json"))
    fail(run_dir, ": no summary.json (has the run finished?)");
  r.summary = read_json(run_dir + "/summary.json");
  const std::string checkpoint = latest_checkpoint(run_dir);
  if (checkpoint.empty()) fail(run_dir, ": no checkpoint");
  r.run_config = read_json(checkpoint + "/state.json").at("run_config");
  const json& data = r.run_config.at("data");
  if (data.at("val").get<std::string>().empty()) fail(run_dir, ": the run has no validation data");
  const std::unique_ptr<Weights> weights = load_model(checkpoint);
  TrainState state(*weights);
  std::vector<uint32_t> token_bytes;
  const TokenShard shard(data.at("val").get<std::string>());
  if (!data.at("tokenizer").get<std::string>().empty()) {
    const std::string tokenizer_path = data.at("tokenizer").get<std::string>();
    const Tokenizer tokenizer = Tokenizer::load(tokenizer_path);
    require_shard_tokenizer(shard, tokenizer, tokenizer_path);
    token_bytes = token_byte_lengths(tokenizer);
  }
  const WindowKind window = data.at("window") == "bos" ? WindowKind::bos : WindowKind::plain;
  r.eval = evaluate(state, shard, data.at("seq_len").get<int>(), window, windows,
                    r.run_config.at("batch_size").get<int>(),
                    token_bytes.empty() ? nullptr : &token_bytes);
  require_finite_loss(r.eval, run_dir);
  AnalysisOptions analysis;
  analysis.seq_len = data.at("seq_len").get<int>();
  analysis.bos = window == WindowKind::bos;
  analysis.from_position = std::min(16, analysis.seq_len - 1);
  if (maps)
    for (int l = 0; l < weights->config().num_hidden_layers; ++l)
      for (int h = 0; h < weights->config().num_attention_heads; ++h)
        analysis.maps.push_back({l, h});
  r.analysis = analyze(*weights, shard, analysis);
  return r;
}

// "%.0f" numbers get thousands separators.
std::string number(double x, const char* format = "%.4f") {
  if (std::string(format) == "%.0f") return with_commas(std::llround(x));
  char text[64];
  std::snprintf(text, sizeof text, format, x);
  return text;
}

using Metric = std::function<double(const RunResult&)>;

std::vector<double> values(const std::vector<RunResult>& runs, const Metric& metric) {
  std::vector<double> v;
  for (const RunResult& r : runs) v.push_back(metric(r));
  return v;
}
void write_reports(const std::string& a, const std::vector<RunResult>& base, const std::string& b,
                   const std::vector<RunResult>& cand, const std::string& out,
                   const std::string& html) {
  auto analyses = [](const std::vector<RunResult>& runs) {
    std::vector<json> all;
    for (const RunResult& r : runs) all.push_back(to_json(r.analysis));
    return all;
  };
  const json c = comparison_json(a, analyses(base), b, analyses(cand));
  if (!out.empty()) {
    write_text_file_atomically(out, c.dump(1) + "\n");
    std::printf("  wrote %s\n", out.c_str());
  }
  if (!html.empty()) {
    write_text_file_atomically(html,
                               comparison_report_html(c, "gattn compare: " + b + " against " + a));
    std::printf("  report: %s\n", html.c_str());
  }
}
}  // namespace

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "Compare a baseline and a candidate, paired by seed");
  static std::vector<std::string> baseline_dirs, candidate_dirs;
  static int64_t windows = 0;
  static int threads = 0;
  static std::string html, out;
  cmd->add_option("--baseline", baseline_dirs, "run folders of the baseline, one per seed")
      ->required();
  cmd->add_option("--candidate", candidate_dirs,
                  "run folders of the candidate, same seeds, same order")
      ->required();
  cmd->add_option("--windows", windows, "validation windows to score (0: all)")
      ->check(non_negative_integer());
  cmd->add_option("--html", html,
                  "write the side-by-side HTML report here (first-token attention, attention "
                  "maps, M-Act, gate scores)");
  cmd->add_option("--out", out, "write the comparison JSON (both models' mean analyses) here");
  add_threads_option(cmd, threads, "threads (default: all cores)");
  cmd->callback([] {
    if (baseline_dirs.size() != candidate_dirs.size())
      fail("--baseline has ", baseline_dirs.size(), " runs and --candidate ", candidate_dirs.size(),
           ": pass one run per seed for each, in the same seed order");
    use_threads(threads);
    std::vector<RunResult> base, cand;
    const bool maps = !html.empty() || !out.empty();
    for (const std::string& dir : baseline_dirs) base.push_back(score(dir, windows, maps));
    for (const std::string& dir : candidate_dirs) cand.push_back(score(dir, windows, maps));
    for (size_t i = 0; i < base.size(); ++i)
      if (base[i].run_config.at("seed") != cand[i].run_config.at("seed"))
        fail(base[i].name, " and ", cand[i].name, " have different seeds: runs are paired by seed");

    const std::string a =
        base[0].summary.at("gate").get<std::string>() == "none" ? "baseline" : base[0].name;
    const std::string b = cand[0].name.substr(0, cand[0].name.rfind("-s"));
    std::printf("\n  %-28s %14s %14s %14s\n", "mean over seeds", a.c_str(), b.c_str(),
                "difference");
    auto summary = [](const char* key) {
      return [key](const RunResult& r) { return r.summary.at(key).get<double>(); };
    };
    auto analysis = [](double AnalysisResult::*field) {
      return [field](const RunResult& r) { return r.analysis.*field; };
    };
    struct Row {
      const char* label;
      Metric metric;
      const char* format;
    };
    std::vector<Row> rows = {
        {"parameters", summary("parameters"), "%.0f"},
        {"val loss (nats/token)", [](const RunResult& r) { return r.eval.loss; }, "%.4f"},
        {"val perplexity", [](const RunResult& r) { return r.eval.perplexity; }, "%.2f"},
        {"val bits per byte",
         [](const RunResult& r) { return r.eval.bytes > 0 ? r.eval.bits_per_byte : std::nan(""); },
         "%.4f"},
        {"F-Attn (first-token attn.)", analysis(&AnalysisResult::f_attn), "%.4f"},
        {"Sink^0.3 (share of heads)", analysis(&AnalysisResult::sink_fraction), "%.3f"},
        {"M-Act (max |hidden|, mean)", analysis(&AnalysisResult::m_act), "%.2f"},
        {"gate score (mean)",
         [](const RunResult& r) { return r.analysis.gate_score.value_or(std::nan("")); }, "%.4f"},
        {"training tokens/s", summary("tokens_per_s"), "%.0f"},
        {"training time (s)", summary("train_seconds"), "%.1f"},
        {"final train loss", summary("final_train_loss"), "%.4f"}};
    for (const Row& row : rows) {
      const double x = mean(values(base, row.metric)), y = mean(values(cand, row.metric));
      if (std::isnan(x) && std::isnan(y)) continue;
      auto cell = [&](double v) {
        return std::isnan(v) ? std::string("-") : number(v, row.format);
      };
      const std::string diff =
          std::isnan(x) || std::isnan(y) ? "" : (y >= x ? "+" : "") + number(y - x, row.format);
      std::printf("  %-28s %14s %14s %14s\n", row.label, cell(x).c_str(), cell(y).c_str(),
                  diff.c_str());
    }
    std::printf("\n  %-10s %-30s %12s %12s %24s\n", "seed", "runs", "val loss", "val loss",
                "difference (window SE)");
    for (size_t i = 0; i < base.size(); ++i) {
      const PairedDifference d =
          paired_difference(base[i].eval.window_loss, cand[i].eval.window_loss);
      std::printf("  %-10s %-30s %12.4f %12.4f %14s +- %.4f%s\n",
                  base[i].run_config.at("seed").dump().c_str(),
                  (base[i].name + " / " + cand[i].name).c_str(), base[i].eval.loss,
                  cand[i].eval.loss, number(d.mean, "%+.4f").c_str(), d.standard_error,
                  d.within_noise() ? " (within validation noise)" : "");
    }
    const SeedVerdict v =
        seed_verdict(values(base, [](const RunResult& r) { return r.eval.loss; }),
                     values(cand, [](const RunResult& r) { return r.eval.loss; }));
    std::printf("\n  %s - %s val loss: %+.4f nats/token, %s\n", b.c_str(), a.c_str(),
                v.mean_difference, v.text().c_str());
    const AnalysisResult& a0 = base[0].analysis;
    std::printf(
        "  F-Attn, Sink, M-Act, gate score: the first %lld validation windows; F-Attn of uniform "
        "attention %.4f\n",
        (long long)a0.sequences, a0.uniform_f_attn);
    std::printf(
        "  validation: %lld windows of %d tokens (%lld target tokens), the same for every run; "
        "window SE = standard error of the per-window paired difference\n",
        (long long)base[0].eval.windows, base[0].run_config.at("data").at("seq_len").get<int>(),
        (long long)base[0].eval.tokens);
    if (!html.empty() || !out.empty()) write_reports(a, base, b, cand, out, html);
  });
}

}  // namespace gattn
