// Every logit the inference paths compute for one model, written as raw floats, so two builds can
// be compared byte for byte (bench/bits_check.sh): a rectangular forward (TrainState), a prompt
// prefilled in uneven chunks then decoded greedily (InferState), and three sequences prefilled
// to different lengths then decoded together (BatchedInferState).
//   gattn_infer_bits MODEL_FOLDER f32|bf16 OUT_FILE
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "io/hf_weights.h"
#include "model/batched_infer_state.h"
#include "model/infer_state.h"
#include "model/train_state.h"
#include "util/error.h"

namespace {

struct Sink {
  std::FILE* f;
  void put(const float* x, size_t n) {
    if (std::fwrite(x, sizeof(float), n, f) != n) gattn::fail("infer_bits: write failed");
  }
};

std::vector<int32_t> tokens(int n, int vocab, int seed) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = int32_t((i * 7 + seed * 13 + (i * i) % 11) % vocab);
  return ids;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 4) gattn::fail("usage: gattn_infer_bits MODEL_FOLDER f32|bf16 OUT_FILE");
  auto model = gattn::load_any_model(argv[1]);
  if (std::string(argv[2]) == "bf16") model->convert_to_bf16();
  const gattn::Weights& w = *model;
  const int V = w.config().vocab_size;
  Sink out{std::fopen(argv[3], "wb")};
  if (!out.f) gattn::fail("infer_bits: cannot open ", argv[3]);

  {  // rectangular forward: 2 sequences of 40
    gattn::TrainState state(w);
    const auto ids = tokens(80, V, 1);
    std::vector<float> logits(size_t(80) * V);
    state.forward({ids.data(), nullptr, 2, 40}, logits.data());
    out.put(logits.data(), logits.size());
  }
  {  // one sequence: a prompt of 23 in chunks of 7, 7, 9, then 10 greedy decode steps
    gattn::InferState state(w, 64, 9);
    const auto ids = tokens(23, V, 2);
    std::vector<float> logits(size_t(9) * V);
    for (int at = 0, chunk = 7; at < 23; at += chunk, chunk = at == 14 ? 9 : 7) {
      state.forward(ids.data() + at, chunk, logits.data());
      out.put(logits.data(), size_t(chunk) * V);
    }
    int32_t next = bench::argmax(logits.data() + size_t(8) * V, V);
    for (int step = 0; step < 10; ++step) {
      state.forward_last(&next, 1, logits.data());
      out.put(logits.data(), V);
      next = bench::argmax(logits.data(), V);
    }
  }
  {  // three slots prefilled to 5, 17 and 11 tokens, then 6 decode steps of all three
    gattn::BatchedInferState state(w, 3, 48, 17);
    const int lengths[3] = {5, 17, 11};
    std::vector<float> logits(size_t(17) * V);
    std::vector<int32_t> next(3);
    for (int s = 0; s < 3; ++s) {
      const auto ids = tokens(lengths[s], V, 3 + s);
      state.prefill(s, ids.data(), lengths[s], logits.data(), true);
      out.put(logits.data(), size_t(lengths[s]) * V);
      next[s] = bench::argmax(logits.data() + size_t(lengths[s] - 1) * V, V);
    }
    const std::vector<int> slots = {2, 0, 1};
    std::vector<int32_t> step_ids(3);
    for (int step = 0; step < 6; ++step) {
      for (int i = 0; i < 3; ++i) step_ids[i] = next[slots[i]];
      state.decode(slots, step_ids, logits.data());
      out.put(logits.data(), size_t(3) * V);
      for (int i = 0; i < 3; ++i) next[slots[i]] = bench::argmax(logits.data() + size_t(i) * V, V);
    }
  }
  if (std::fclose(out.f) != 0) gattn::fail("infer_bits: closing ", argv[3], " failed");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gattn_infer_bits: %s\n", e.what());
  return 1;
}
