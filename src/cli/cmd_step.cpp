// gattn step: build a model from a config, run forward+backward steps on random tokens and time
// them. The smallest real end-to-end job: every op, forward and backward, at a chosen size.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cli/commands.h"
#include "cli/format.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "util/threads.h"

namespace gattn {

void add_step_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("step", "Time forward+backward steps of a config on random tokens");
  static std::string config_path;
  static int batch = 4, seq = 256, steps = 5, threads = 0;
  static uint64_t seed = 0;
  static std::string gate;
  cmd->add_option("--config", config_path, "model config JSON")->required();
  cmd->add_option("--gate", gate,
                  "gate object replacing the config's, e.g. '{\"position\": \"value\"}'");
  cmd->add_option("--batch", batch, "sequences per step")->check(CLI::PositiveNumber);
  cmd->add_option("--seq", seq, "tokens per sequence")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", seed, "initialisation and data seed");
  cmd->add_option("--threads", threads, "threads (default: all cores)");
  cmd->callback([] {
    if (threads > 0) set_num_threads(threads);
    const Config config = load_config(config_path, gate);
    print_parameter_table(config, false);
    Model model(config);
    model.init(seed);

    const int64_t tokens = int64_t(batch) * seq;
    std::vector<int32_t> ids(tokens), targets(tokens);
    std::mt19937_64 rng(seed);  // exactly specified by the standard, unlike its distributions
    for (int32_t& id : ids) id = int32_t(rng() % uint64_t(config.vocab_size));
    for (int64_t i = 0; i < tokens; ++i) targets[i] = (i + 1) % seq == 0 ? -1 : ids[i + 1];
    const Batch b{ids.data(), targets.data(), batch, seq};
    const float scale = 1.0f / float(count_targets(b));

    std::printf("threads %d (OpenBLAS core %s), batch %d x %d tokens\n", num_threads(),
                blas_core_name().c_str(), batch, seq);
    std::vector<double> ms;
    for (int s = 0; s < steps; ++s) {
      model.zero_grads();
      const auto t0 = std::chrono::steady_clock::now();
      const LossSum loss = model.forward_backward(b, scale);
      const auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      double grad_sq = 0;
      for (float x : model.grads()) grad_sq += double(x) * x;
      std::printf("step %d/%d: loss %.4f (ln vocab %.4f), grad norm %.4f, %.1f ms\n", s + 1, steps,
                  loss.nats / loss.tokens, std::log(double(config.vocab_size)), std::sqrt(grad_sq),
                  ms.back());
    }
    if (steps > 1) std::sort(ms.begin() + 1, ms.end());  // the first step plans the arenas
    const double median = steps > 1 ? ms[1 + (steps - 1) / 2] : ms[0];
    std::printf("median step %.1f ms (first excluded), %.0f tokens/s\n", median,
                tokens / median * 1e3);
    std::printf(
        "activations kept for backward: %.1f KiB per token; backward scratch: %.1f KiB per token\n",
        model.activations().bytes() / 1024.0 / tokens, model.scratch().bytes() / 1024.0 / tokens);
  });
}

}  // namespace gattn
