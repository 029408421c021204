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
#include "cli/inputs.h"
#include "cli/validators.h"
#include "io/checkpoint.h"
#include "model/batched_infer_state.h"
#include "model/block.h"
#include "model/flops.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "ops/bf16_gemm.h"
#include "ops/delta_rule.h"
#include "ops/gemm_floor.h"
#include "ops/gemm_log.h"
#include "ops/matmul.h"
#include "train/adamw.h"
#include "train/step.h"
#include "util/cpu_isa.h"
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

// The machine's GEMM rate on n = 2048 square matrices, same threads: OpenBLAS sgemm, or with
// bf16 the native bf16 GEMM (conversion of both inputs included, as in a step).
double gemm_peak_gflops(GemmPrecision precision) {
  const int n = 2048;
  std::vector<float> a(size_t(n) * n, 1.0f), b(a.size(), 0.5f), c(a.size());
  auto gemm = [&] {
    if (precision == GemmPrecision::bf16)
      bf16_gemm(c.data(), a.data(), b.data(), n, n, n, false, false, 1, 0, n, n, n);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n,
                  0, c.data(), n);
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

struct BenchOptions {
  std::string config_path, gate;
  GemmPrecision precision = GemmPrecision::fp32;
  int batch = 8, seq = 256, steps = 11, warmup = 2, threads = 0;
  uint64_t seed = 0;
  bool json_output = false, skip_forward = false, profile = false, no_peak = false;
  bool memory_plan = false;
};

struct BenchResult {
  std::vector<double> train_ms, forward_ms;
  StepResult last;
  OpProfile ops;
  GemmFloor gemm_floor;  // with --profile
  int64_t rss_growth_bytes = 0;
};

// Random tokens, each target the next token (none after a sequence's last).
void random_batch(const BenchOptions& o, int vocab, std::vector<int32_t>& ids,
                  std::vector<int32_t>& targets) {
  const int64_t tokens = int64_t(o.batch) * o.seq;
  ids.resize(tokens);
  targets.resize(tokens);
  std::mt19937_64 rng(o.seed);  // exactly specified by the standard, unlike its distributions
  for (int32_t& id : ids) id = int32_t(rng() % uint64_t(vocab));
  for (int64_t i = 0; i < tokens; ++i) targets[i] = (i + 1) % o.seq == 0 ? -1 : ids[i + 1];
}

// rss_before: the anonymous RSS before the weights were allocated.
BenchResult run_bench(const BenchOptions& o, Weights& weights, TrainState& state,
                      int64_t rss_before) {
  BenchResult r;
  AdamW optimizer(weights.layout(), AdamWOptions{});
  std::vector<int32_t> ids, targets;
  random_batch(o, weights.config().vocab_size, ids, targets);
  const Batch batch{ids.data(), targets.data(), o.batch, o.seq};
  auto train_step = [&] {
    r.last = optimizer_step(weights, state, optimizer,
                            {ids.data(), targets.data(), 1, o.batch, o.seq}, 1e-4, 1.0,
                            {.coef = weights.config().router_aux_loss_coef});
  };
  for (int i = 0; i < o.warmup; ++i) train_step();
  r.rss_growth_bytes = anonymous_rss_bytes() - rss_before;
  const ExecContext plain = state.exec();
  ExecContext timed_ops = plain;
  if (o.profile) timed_ops.profile = &r.ops;
  state.set_exec(timed_ops);
  r.train_ms = time_ms(o.steps, train_step);
  state.set_exec(plain);
  if (o.profile) {  // one more step, recording its GEMMs, then each shape timed alone
    const StepResult timed = r.last;
    GemmLog log;
    ExecContext logged = plain;
    logged.gemm_log = &log;
    state.set_exec(logged);
    train_step();
    state.set_exec(plain);
    r.last = timed;  // the reported loss stays the one after the timed steps
    r.gemm_floor = measure_gemm_floor(plain, log.calls());
  }
  if (!o.skip_forward) {
    state.forward(batch);
    r.forward_ms = time_ms(o.steps, [&] { state.forward(batch); });
  }
  return r;
}

nlohmann::json bench_json(const BenchOptions& o, const Weights& weights, const TrainState& state,
                          const BenchResult& r, double peak) {
  const Config& config = weights.config();
  const int64_t tokens = int64_t(o.batch) * o.seq;
  const double flops = training_flops_per_token(config, o.seq);
  const double train_median = median(r.train_ms);
  const double train_gflops = flops * tokens / (train_median * 1e-3) / 1e9;
  const double kept = double(weights.layout().total()) * 4 * 4 /* params, grads, m, v */ +
                      double(state.activations().bytes() + state.scratch().bytes());
  nlohmann::json j = {
      {"config", o.config_path},
      {"gate", gate_description(config.gate)},
      {"parameters", weights.layout().total()},
      {"threads", num_threads()},
      {"blas_core", blas_core_name()},
      {"isa", isa_description()},
      {"onednn_isa", onednn_isa_name()},
      {"precision", gemm_precision_name(o.precision)},
      {"batch", o.batch},
      {"seq", o.seq},
      {"steps", o.steps},
      {o.precision == GemmPrecision::bf16 ? "bf16_gemm_peak_gflops" : "sgemm_peak_gflops", peak},
      {"train_ms", r.train_ms},
      {"train_median_ms", train_median},
      {"train_tokens_per_s", tokens / (train_median * 1e-3)},
      {"train_flops_per_token", flops},
      {"train_gflops", train_gflops},
      {"train_fraction_of_peak", peak > 0 ? nlohmann::json(train_gflops / peak) : nlohmann::json()},
      {"final_loss", r.last.loss},
      {"activation_bytes_per_token", double(state.activations().bytes()) / double(tokens)},
      {"rss_growth_bytes", r.rss_growth_bytes},
      {"rss_growth_vs_plan", r.rss_growth_bytes / kept}};
  if (!r.forward_ms.empty()) {
    const double forward_median = median(r.forward_ms);
    j["forward_ms"] = r.forward_ms;
    j["forward_median_ms"] = forward_median;
    j["forward_tokens_per_s"] = tokens / (forward_median * 1e-3);
    j["forward_gflops"] = flops / 3 * tokens / (forward_median * 1e-3) / 1e9;
  }
  if (o.profile) {
    nlohmann::json per_op = nlohmann::json::object();
    for (const auto& [op, seconds] : r.ops.totals()) per_op[op] = seconds * 1e3 / o.steps;
    j["op_ms_per_step"] = per_op;
    const GemmFloor& f = r.gemm_floor;
    j["gemm_floor"] = {{"ms", f.ms},
                       {"weight_ms", f.weight_ms},
                       {"tile_ms", f.tile_ms},
                       {"gflop", f.gflop},
                       {"calls", f.calls()},
                       {"shapes", f.shapes()},
                       {"step_over_floor", train_median / f.ms}};
  }
  return j;
}

void print_profile(const BenchOptions& o, const BenchResult& r) {
  const double step_ms = std::accumulate(r.train_ms.begin(), r.train_ms.end(), 0.0) / o.steps;
  double counted = 0;
  std::printf("time per training step by op (mean of %d steps, %.1f ms):\n", o.steps, step_ms);
  for (const auto& [op, seconds] : r.ops.totals()) {
    const double ms = seconds * 1e3 / o.steps;
    counted += ms;
    std::printf("  %-56s %8.1f ms %5.1f%%\n", op.c_str(), ms, 100 * ms / step_ms);
  }
  std::printf("  %-56s %8.1f ms %5.1f%%\n", "other (optimizer, gradient norm, clipping, zeroing)",
              step_ms - counted, 100 * (step_ms - counted) / step_ms);
  const GemmFloor& f = r.gemm_floor;
  std::printf(
      "GEMM-bound floor: %.1f ms (the step's %lld GEMM calls, %d shapes, %.1f GFLOP, each shape "
      "timed alone: weight GEMMs %.1f ms, attention tiles %.1f ms); the step's median is %.2fx "
      "the floor\n",
      f.ms, static_cast<long long>(f.calls()), f.shapes(), f.gflop, f.weight_ms, f.tile_ms,
      median(r.train_ms) / f.ms);
  std::printf("  %-52s %8s %10s %9s\n",
              "shape (m x n x k, op(a) op(b), += c, tile, rounded, strides)", "calls", "ms",
              "GFLOP/s");
  for (const GemmShapeTime& t : f.per_shape) {
    const GemmShape& s = t.shape;
    const bool packed =
        s.lda == (s.trans_a ? s.m : s.k) && s.ldb == (s.trans_b ? s.k : s.n) && s.ldc == s.n;
    char strides[48] = "";
    if (!packed) std::snprintf(strides, sizeof strides, " ld %d/%d/%d", s.lda, s.ldb, s.ldc);
    char label[128];
    std::snprintf(label, sizeof label, "%d x %d x %d %s%s%s%s%s%s", s.m, s.n, s.k,
                  s.trans_a ? "T" : "N", s.trans_b ? "T" : "N", s.accumulate ? " +=" : "",
                  s.in_parallel ? " tile" : "", s.rounded_inputs ? " rounded" : "", strides);
    const double gflops = 2e-6 * s.m * s.n * double(s.k) * double(t.calls) / t.ms;
    std::printf("  %-52s %8lld %10.1f %9.1f\n", label, static_cast<long long>(t.calls), t.ms,
                gflops);
  }
}

void print_arena(const Arena& arena, const char* title, int64_t tokens) {
  std::printf("%s: %.1f MiB\n", title, arena.bytes() / 1048576.0);
  for (const Arena::Entry& e : arena.entries())
    std::printf("  %-36s %12s floats  %8.1f KiB per token%s\n", e.name.c_str(),
                with_commas(e.floats).c_str(), e.floats * 4.0 / 1024 / tokens,
                e.shared ? "  (shared)" : "");
}

// Each layer's attention block alone, per token: what it keeps for the backward pass, what it
// needs only while it runs (shared by every block), its backward scratch (shared too) and, for a
// Gated DeltaNet, what each thread of its delta rule's backward pass holds (one value head's
// prepared chunks and chunk-start states, per token of one sequence).
void print_block_memory(const Weights& w, int64_t tokens, int seq) {
  std::printf(
      "per token, each layer's attention block (KiB): kept for backward | transient | "
      "backward scratch | delta rule backward per thread\n");
  for (int l = 0; l < w.config().num_hidden_layers; ++l) {
    const Block& block = w.block(2 * l);
    Arena kept, transient, scratch;
    std::unique_ptr<BlockActivations> a = block.plan_activations(kept, tokens);
    block.plan_transient(transient, tokens, *a);
    block.plan_scratch(scratch, tokens);
    const AttentionConfig& c = w.layer(l).attention;
    const bool linear = c.kind == AttentionKind::linear;
    const DeltaRuleShape one{.sequences = 1,
                             .tokens = seq,
                             .key_heads = c.delta_net.key_heads,
                             .value_heads = c.delta_net.value_heads,
                             .key_dim = c.delta_net.key_dim,
                             .value_dim = c.delta_net.value_dim};
    const double states = linear ? double(one.backward_values_per_thread()) * 4 / seq : 0.0;
    auto kib = [&](double bytes) { return bytes / 1024.0 / double(tokens); };
    std::printf("  layer %3d %-15s %9.2f %11.2f %18.2f %15.2f\n", l,
                linear ? "Gated DeltaNet" : "full attention", kib(double(kept.planned_bytes())),
                kib(double(transient.planned_bytes())), kib(double(scratch.planned_bytes())),
                states / 1024.0);
  }
}

// Every buffer of the plan with its size, as llm.c prints its activation count; and the plan of
// inference over one prefill chunk of seq tokens (one block's working set at a time).
void print_memory_plan(const TrainState& state, int64_t tokens, int seq) {
  print_block_memory(state.weights(), tokens, seq);
  print_arena(state.activations(), "activations kept for backward", tokens);
  print_arena(state.scratch(), "scratch", tokens);
  const BatchedInferState inference(state.weights(), 1, seq, seq);
  char title[160];
  std::snprintf(title, sizeof title, "inference, a prefill chunk of %d tokens (working set)", seq);
  print_arena(inference.activations(), title, seq);
  std::printf("inference decode memory (keys and values of %d positions): %.1f MiB\n", seq,
              inference.decode_memory_bytes() / 1048576.0);
}

void print_bench(const BenchOptions& o, const Config& config, const TrainState& state,
                 const BenchResult& r, const nlohmann::json& j, double peak) {
  const int64_t tokens = int64_t(o.batch) * o.seq;
  print_parameter_table(config, false);
  std::printf("ISA %s, oneDNN %s, OpenBLAS core %s\n", isa_description().c_str(),
              onednn_isa_name().c_str(), blas_core_name().c_str());
  std::printf(
      "threads %d, GEMMs in %s, batch %d x %d tokens, median of %d steps after %d warm-up\n",
      num_threads(), gemm_precision_name(o.precision), o.batch, o.seq, o.steps, o.warmup);
  if (peak > 0)
    std::printf("%s peak (n = 2048): %8.1f GFLOP/s\n",
                o.precision == GemmPrecision::bf16 ? "bf16 GEMM" : "    sgemm", peak);
  auto rate = [&](const char* label, double ms, double tokens_per_s, double gflops) {
    std::printf("%-26s %8.1f ms  %9.0f tokens/s  %7.1f GFLOP/s", label, ms, tokens_per_s, gflops);
    if (peak > 0) std::printf("  %5.1f%% of peak", 100 * gflops / peak);
    std::printf("\n");
  };
  rate("training step:", j["train_median_ms"].get<double>(), j["train_tokens_per_s"].get<double>(),
       j["train_gflops"].get<double>());
  if (!o.skip_forward)
    rate("forward pass:", j["forward_median_ms"].get<double>(),
         j["forward_tokens_per_s"].get<double>(), j["forward_gflops"].get<double>());
  std::printf("loss after the steps:      %8.4f (ln vocab %.4f)\n", r.last.loss,
              std::log(double(config.vocab_size)));
  std::printf("activations kept for backward: %.1f KiB per token; scratch: %.1f KiB per token\n",
              state.activations().bytes() / 1024.0 / tokens,
              state.scratch().bytes() / 1024.0 / tokens);
  if (o.memory_plan) print_memory_plan(state, tokens, o.seq);
  if (o.profile) print_profile(o, r);
  std::printf(
      "anonymous RSS growth over the first step: %.1f MiB = %.2fx parameters, gradients, "
      "AdamW state and planned activations\n",
      r.rss_growth_bytes / 1048576.0, j["rss_growth_vs_plan"].get<double>());
}
}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Time training steps and forward passes of a config (tokens/s, FLOP/s vs sgemm)");
  static BenchOptions o;
  cmd->add_option("--config", o.config_path, "model config JSON")->required();
  cmd->add_option("--gate", o.gate, "gate object replacing the config's");
  cmd->add_option("--batch", o.batch, "sequences per step")->check(positive_integer());
  cmd->add_option("--seq", o.seq, "tokens per sequence")->check(positive_integer());
  cmd->add_option("--steps", o.steps, "timed steps (the median is reported)")
      ->check(positive_integer());
  cmd->add_option("--warmup", o.warmup, "untimed steps first")->check(non_negative_integer());
  cmd->add_option("--seed", o.seed, "initialisation and token seed");
  add_threads_option(cmd, o.threads, "threads (default: all cores)");
  cmd->add_option("--precision", o.precision,
                  "GEMM precision: fp32, bf16 (the CPU's bf16 instructions) or bf16_emulated")
      ->transform(CLI::CheckedTransformer(gemm_precision_names()))
      ->capture_default_str();
  cmd->add_flag("--json", o.json_output, "one JSON object instead of the table");
  cmd->add_flag("--train-only", o.skip_forward, "skip the forward-only timing");
  cmd->add_flag("--profile", o.profile,
                "time each op of the training steps, and the step's GEMM-bound floor");
  cmd->add_flag("--no-peak", o.no_peak, "skip the sgemm peak measurement");
  cmd->add_flag("--memory-plan", o.memory_plan, "list every buffer of the step's memory plan");
  cmd->callback([] {
    use_threads(o.threads);
    const Config config = load_config(o.config_path, o.gate);
    check_gemm_precision(o.precision);
    const double peak = o.no_peak ? 0 : gemm_peak_gflops(o.precision);
    const int64_t rss_before = anonymous_rss_bytes();
    Weights weights(config);
    weights.init(o.seed);
    TrainState state(weights);
    state.set_exec({.precision = o.precision});
    const BenchResult r = run_bench(o, weights, state, rss_before);
    const nlohmann::json j = bench_json(o, weights, state, r, peak);
    if (o.json_output)
      std::printf("%s\n", j.dump().c_str());
    else
      print_bench(o, weights.config(), state, r, j, peak);
  });
}

}  // namespace gattn
