// gattn bench: time training steps (forward, backward, AdamW) and forward passes of a config on
// random tokens, with the achieved FLOP/s against the sgemm peak measured in the same run.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/validators.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "train/adamw.h"
#include "train/step.h"
#include "util/op_profile.h"
#include "util/threads.h"

namespace gattn {

namespace {
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

template <typename Work>
std::vector<double> time_ms(int repeats, Work work) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return ms;
}

// The machine's sgemm rate on n = 2048 square matrices, same threads.
double sgemm_peak_gflops() {
  const int n = 2048;
  std::vector<float> a(size_t(n) * n, 1.0f), b(a.size(), 0.5f), c(a.size());
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0,
                c.data(), n);
  };
  gemm();
  return 2.0 * n * n * n / (median(time_ms(5, gemm)) * 1e-3) / 1e9;
}

int64_t anonymous_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  return 0;
}
}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Time training steps and forward passes of a config (tokens/s, FLOP/s vs sgemm)");
  static std::string config_path, gate;
  static int batch = 8, seq = 256, steps = 11, warmup = 2, threads = 0;
  static uint64_t seed = 0;
  static bool json_output = false, skip_forward = false, profile = false, no_peak = false;
  cmd->add_option("--config", config_path, "model config JSON")->required();
  cmd->add_option("--gate", gate, "gate object replacing the config's");
  cmd->add_option("--batch", batch, "sequences per step")->check(positive_integer());
  cmd->add_option("--seq", seq, "tokens per sequence")->check(positive_integer());
  cmd->add_option("--steps", steps, "timed steps (the median is reported)")
      ->check(positive_integer());
  cmd->add_option("--warmup", warmup, "untimed steps first")->check(non_negative_integer());
  cmd->add_option("--seed", seed, "initialisation and token seed");
  add_threads_option(cmd, threads, "threads (default: all cores)");
  cmd->add_flag("--json", json_output, "one JSON object instead of the table");
  cmd->add_flag("--train-only", skip_forward, "skip the forward-only timing");
  cmd->add_flag("--profile", profile, "time each op of the training steps too");
  cmd->add_flag("--no-peak", no_peak, "skip the sgemm peak measurement");
  cmd->callback([] {
    if (threads > 0) set_num_threads(threads);
    const Config config = load_config(config_path, gate);
    const double peak = no_peak ? 0 : sgemm_peak_gflops();
    const int64_t rss_before = anonymous_rss_bytes();
    Model model(config);
    model.init(seed);
    AdamW optimizer(model.layout(), AdamWOptions{});

    const int64_t tokens = int64_t(batch) * seq;
    std::vector<int32_t> ids(tokens), targets(tokens);
    std::mt19937_64 rng(seed);  // exactly specified by the standard, unlike its distributions
    for (int32_t& id : ids) id = int32_t(rng() % uint64_t(config.vocab_size));
    for (int64_t i = 0; i < tokens; ++i) targets[i] = (i + 1) % seq == 0 ? -1 : ids[i + 1];
    StepResult last;
    auto train_step = [&] {
      last =
          optimizer_step(model, optimizer, {ids.data(), targets.data(), 1, batch, seq}, 1e-4, 1.0);
    };
    for (int i = 0; i < warmup; ++i) train_step();
    const int64_t rss_after_step = anonymous_rss_bytes();
    OpProfile ops;
    if (profile) model.set_profile(&ops);
    const std::vector<double> train_ms = time_ms(steps, train_step);
    model.set_profile(nullptr);
    std::vector<double> forward_ms;
    if (!skip_forward) {
      model.forward({ids.data(), targets.data(), batch, seq});
      forward_ms = time_ms(steps, [&] { model.forward({ids.data(), targets.data(), batch, seq}); });
    }

    // PaLM's count: 6 N per token for the weight GEMMs (N with the LM head, without the
    // embedding lookup) and 6 L H d T for causal attention; a forward pass is a third of it.
    const int64_t embedding = int64_t(config.vocab_size) * config.hidden_size;
    const int64_t weights = model.layout().total() - (config.tie_word_embeddings ? 0 : embedding);
    const double train_flops_per_token = 6.0 * double(weights) + 6.0 * config.num_hidden_layers *
                                                                     config.num_attention_heads *
                                                                     config.head_dim * seq;
    const double train_median = median(train_ms);
    const double train_gflops = train_flops_per_token * tokens / (train_median * 1e-3) / 1e9;
    const double kept = double(model.layout().total()) * 4 * 4 /* params, grads, m, v */ +
                        double(model.activations().bytes() + model.scratch().bytes());
    nlohmann::json j = {
        {"config", config_path},
        {"gate", gate_description(config.gate)},
        {"parameters", model.layout().total()},
        {"threads", num_threads()},
        {"blas_core", blas_core_name()},
        {"batch", batch},
        {"seq", seq},
        {"steps", steps},
        {"sgemm_peak_gflops", peak},
        {"train_ms", train_ms},
        {"train_median_ms", train_median},
        {"train_tokens_per_s", tokens / (train_median * 1e-3)},
        {"train_flops_per_token", train_flops_per_token},
        {"train_gflops", train_gflops},
        {"train_fraction_of_peak",
         peak > 0 ? nlohmann::json(train_gflops / peak) : nlohmann::json()},
        {"final_loss", last.loss},
        {"activation_bytes_per_token", double(model.activations().bytes()) / double(tokens)},
        {"rss_growth_bytes", rss_after_step - rss_before},
        {"rss_growth_vs_plan", (rss_after_step - rss_before) / kept}};
    if (!skip_forward) {
      const double forward_median = median(forward_ms);
      j["forward_ms"] = forward_ms;
      j["forward_median_ms"] = forward_median;
      j["forward_tokens_per_s"] = tokens / (forward_median * 1e-3);
      j["forward_gflops"] = train_flops_per_token / 3 * tokens / (forward_median * 1e-3) / 1e9;
    }
    if (profile) {
      nlohmann::json per_op = nlohmann::json::object();
      for (const auto& [op, seconds] : ops.totals()) per_op[op] = seconds * 1e3 / steps;
      j["op_ms_per_step"] = per_op;
    }
    if (json_output) {
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    print_parameter_table(config, false);
    std::printf(
        "threads %d, OpenBLAS core %s, batch %d x %d tokens, median of %d steps after %d warm-up\n",
        num_threads(), blas_core_name().c_str(), batch, seq, steps, warmup);
    if (peak > 0) std::printf("sgemm peak (n = 2048):     %8.1f GFLOP/s\n", peak);
    auto rate = [&](const char* label, double ms, double tokens_per_s, double gflops) {
      std::printf("%-26s %8.1f ms  %9.0f tokens/s  %7.1f GFLOP/s", label, ms, tokens_per_s, gflops);
      if (peak > 0) std::printf("  %5.1f%% of peak", 100 * gflops / peak);
      std::printf("\n");
    };
    rate("training step:", train_median, j["train_tokens_per_s"].get<double>(), train_gflops);
    if (!skip_forward)
      rate("forward pass:", j["forward_median_ms"].get<double>(),
           j["forward_tokens_per_s"].get<double>(), j["forward_gflops"].get<double>());
    std::printf("loss after the steps:      %8.4f (ln vocab %.4f)\n", last.loss,
                std::log(double(config.vocab_size)));
    std::printf("activations kept for backward: %.1f KiB per token; scratch: %.1f KiB per token\n",
                model.activations().bytes() / 1024.0 / tokens,
                model.scratch().bytes() / 1024.0 / tokens);
    if (profile) {
      const double step_ms = std::accumulate(train_ms.begin(), train_ms.end(), 0.0) / steps;
      double counted = 0;
      std::printf("time per training step by op (mean of %d steps, %.1f ms):\n", steps, step_ms);
      for (const auto& [op, seconds] : ops.totals()) {
        const double ms = seconds * 1e3 / steps;
        counted += ms;
        std::printf("  %-56s %8.1f ms %5.1f%%\n", op.c_str(), ms, 100 * ms / step_ms);
      }
      std::printf("  %-56s %8.1f ms %5.1f%%\n",
                  "other (optimizer, gradient norm, clipping, zeroing)", step_ms - counted,
                  100 * (step_ms - counted) / step_ms);
    }
    std::printf(
        "anonymous RSS growth over the first step: %.1f MiB = %.2fx parameters, gradients, "
        "AdamW state and planned activations\n",
        (rss_after_step - rss_before) / 1048576.0, j["rss_growth_vs_plan"].get<double>());
  });
}

}  // namespace gattn
