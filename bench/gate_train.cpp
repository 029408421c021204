// What gates cost in training, with the machine's drift taken out: one config's shape with each of
// several gates, all in memory at once, trained in turns of one optimizer step (forward, backward,
// clipping, AdamW) on the same random tokens, so that a slow second of the shared machine slows
// every model alike. The order of the models turns with each round; it prints each model's step
// time per round.
//   gattn_bench_gate_train CONFIG BATCH SEQ THREADS ROUNDS fp32|bf16 GATE_JSON...
// bench/gate_overhead.py runs it and reports paired per-round differences.
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "io/checkpoint.h"
#include "model/flops.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "train/adamw.h"
#include "train/step.h"
#include "util/error.h"
#include "util/threads.h"

namespace {
using bench::Clock;
using bench::seconds_since;

constexpr int kWarmupSteps = 2;

struct Contender {
  std::string gate;
  std::unique_ptr<gattn::Weights> weights;
  std::unique_ptr<gattn::TrainState> state;
  std::unique_ptr<gattn::AdamW> optimizer;
};

void step(Contender& m, const gattn::StepBatch& batch) {
  gattn::optimizer_step(*m.weights, *m.state, *m.optimizer, batch, 1e-4, 1.0);
}

int positive(const char* text, const char* name) {
  const int value = std::stoi(text);
  if (value < 1) gattn::fail(name, " must be positive, got ", text);
  return value;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: gattn_bench_gate_train CONFIG BATCH SEQ THREADS ROUNDS fp32|bf16 "
                 "GATE_JSON...\n");
    return 2;
  }
  try {
    const int batch_size = positive(argv[2], "BATCH"), seq = positive(argv[3], "SEQ");
    const int threads = std::stoi(argv[4]), rounds = positive(argv[5], "ROUNDS");
    const auto precision = gattn::gemm_precision_names().find(argv[6]);
    if (precision == gattn::gemm_precision_names().end() ||
        precision->second == gattn::GemmPrecision::bf16_emulated)
      gattn::fail("PRECISION must be fp32 or bf16, got ", argv[6]);
    gattn::check_gemm_precision(precision->second);
    if (threads > 0) gattn::set_num_threads(threads);
    std::vector<Contender> models;
    for (int i = 7; i < argc; ++i) {
      Contender m;
      m.gate = argv[i];
      m.weights = std::make_unique<gattn::Weights>(gattn::load_config(argv[1], m.gate));
      m.weights->init(1);
      m.state = std::make_unique<gattn::TrainState>(*m.weights);
      m.state->set_exec({.precision = precision->second});
      m.optimizer = std::make_unique<gattn::AdamW>(m.weights->layout(), gattn::AdamWOptions{});
      models.push_back(std::move(m));
    }
    const int64_t tokens = int64_t(batch_size) * seq;
    std::vector<int32_t> ids(tokens), targets(tokens);
    std::mt19937_64 rng(0);
    const uint64_t vocab = uint64_t(models[0].weights->config().vocab_size);
    for (int32_t& id : ids) id = int32_t(rng() % vocab);
    for (int64_t i = 0; i < tokens; ++i) targets[i] = (i + 1) % seq == 0 ? -1 : ids[i + 1];
    const gattn::StepBatch batch{ids.data(), targets.data(), 1, batch_size, seq};

    std::printf("threads %d, %s, batch %d x %d, one step per model in turns\n",
                gattn::num_threads(), argv[6], batch_size, seq);
    for (int i = 0; i < int(models.size()); ++i)
      std::printf("model %d: %lld parameters, %.6g FLOPs per token, gate %s\n", i,
                  static_cast<long long>(models[i].weights->size()),
                  gattn::training_flops_per_token(models[i].weights->config(), seq),
                  models[i].gate.c_str());
    for (Contender& m : models)
      for (int s = 0; s < kWarmupSteps; ++s) step(m, batch);
    const int n = int(models.size());
    for (int round = 0; round < rounds; ++round) {
      std::vector<double> seconds(n);
      for (int i = 0; i < n; ++i) {  // the order turns with the round
        const int which = (i + round) % n;
        const auto start = Clock::now();
        step(models[which], batch);
        seconds[which] = seconds_since(start);
      }
      for (int i = 0; i < n; ++i)
        std::printf("round %d model %d: step %.6f s\n", round, i, seconds[i]);
      std::fflush(stdout);
    }
  } catch (const gattn::Error& e) {
    std::fprintf(stderr, "gattn_bench_gate_train: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // std::stoi on a malformed number
    std::fprintf(stderr, "gattn_bench_gate_train: error: %s\n", e.what());
    return 1;
  }
}
