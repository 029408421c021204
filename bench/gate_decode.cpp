// What gates cost at decode time, with the machine's drift taken out: one config's shape with
// random weights and each of several gates, all in memory at once, decoded in turns of a few
// tokens (every model's turn within a second of the others'), so that a slow minute of the shared
// machine slows every model alike. Each round prefills the same prompt into every model (timed)
// and then decodes `generate` greedy tokens per model in turns; it prints one line per model.
//   gattn_bench_gate_decode CONFIG PROMPT GENERATE THREADS ROUNDS f32|bf16 GATE_JSON...
// bench/decode_gate_overhead.py runs it and reports paired per-round differences.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "io/checkpoint.h"
#include "model/infer_state.h"
#include "model/weights.h"
#include "util/error.h"
#include "util/threads.h"

namespace {
using bench::argmax;
using bench::Clock;
using bench::seconds_since;

constexpr int kTurn = 8;  // tokens a model decodes before the next model's turn

struct Contender {
  std::string gate;
  std::unique_ptr<gattn::Weights> weights;
  std::unique_ptr<gattn::InferState> state;
  std::vector<float> logits;
  double prefill_s = 0, decode_s = 0;
};

void run_round(std::vector<Contender>& models, const std::vector<int32_t>& prompt, int generate,
               int round) {
  const int n = int(models.size());
  for (int i = 0; i < n; ++i) {  // the order turns with the round
    Contender& m = models[(i + round) % n];
    m.state->reset();
    const auto start = Clock::now();
    m.state->forward_last(prompt.data(), int(prompt.size()), m.logits.data());
    m.prefill_s = seconds_since(start);
    m.decode_s = 0;
  }
  for (int done = 0; done < generate; done += kTurn)
    for (int i = 0; i < n; ++i) {
      Contender& m = models[(i + round) % n];
      const auto start = Clock::now();
      for (int t = done; t < std::min(generate, done + kTurn); ++t) {
        const int32_t next = argmax(m.logits);
        m.state->forward_last(&next, 1, m.logits.data());
      }
      m.decode_s += seconds_since(start);
    }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: gattn_bench_gate_decode CONFIG PROMPT GENERATE THREADS ROUNDS f32|bf16 "
                 "GATE_JSON...\n");
    return 2;
  }
  try {
    const int prompt_length = std::stoi(argv[2]), generate = std::stoi(argv[3]);
    const int threads = std::stoi(argv[4]), rounds = std::stoi(argv[5]);
    const std::string dtype = argv[6];
    if (dtype != "f32" && dtype != "bf16") gattn::fail("DTYPE must be f32 or bf16, got ", dtype);
    if (prompt_length < 1 || generate < 1 || rounds < 1)
      gattn::fail("PROMPT, GENERATE and ROUNDS must be positive");
    if (threads > 0) gattn::set_num_threads(threads);
    std::vector<Contender> models;
    for (int i = 7; i < argc; ++i) {
      Contender m;
      m.gate = argv[i];
      m.weights = std::make_unique<gattn::Weights>(gattn::load_config(argv[1], m.gate));
      m.weights->init(1);
      if (dtype == "bf16") m.weights->convert_to_bf16();
      m.state =
          std::make_unique<gattn::InferState>(*m.weights, prompt_length + generate, prompt_length);
      m.logits.resize(m.weights->config().vocab_size);
      models.push_back(std::move(m));
    }
    std::vector<int32_t> prompt(prompt_length);
    const int vocab = models[0].weights->config().vocab_size;
    for (int i = 0; i < prompt_length; ++i) prompt[i] = (i * 7919) % vocab;
    std::printf("threads %d, %s weights, prompt %d, generate %d in turns of %d\n",
                gattn::num_threads(), dtype.c_str(), prompt_length, generate, kTurn);
    for (int i = 0; i < int(models.size()); ++i)
      std::printf("model %d: %lld parameters, gate %s\n", i,
                  static_cast<long long>(models[i].weights->size()), models[i].gate.c_str());
    for (int round = 0; round < rounds; ++round) {
      run_round(models, prompt, generate, round);
      for (int i = 0; i < int(models.size()); ++i)
        std::printf("round %d model %d: prefill %.4f s (%.1f tok/s), decode %.4f s (%.2f tok/s)\n",
                    round, i, models[i].prefill_s, prompt_length / models[i].prefill_s,
                    models[i].decode_s, generate / models[i].decode_s);
      std::fflush(stdout);
    }
  } catch (const gattn::Error& e) {
    std::fprintf(stderr, "gattn_bench_gate_decode: error: %s\n", e.what());
    return 1;
  }
}
