// What the model tests share: a batch of random token ids with next-token targets, the relative
// L2 distance of two logit rows, and decoding in chunks against one forward pass.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model/infer_state.h"
#include "model/train_state.h"

namespace gattn {

// batch x seq random ids below vocab; targets the next id of each sequence (-1 at its end).
struct Tokens {
  Tokens(int batch, int seq, int vocab, uint64_t seed) : ids(batch * seq), targets(batch * seq) {
    std::mt19937_64 rng(seed);
    for (auto& id : ids) id = int32_t(rng() % vocab);
    for (size_t i = 0; i < ids.size(); ++i) targets[i] = (i + 1) % seq ? ids[i + 1] : -1;
    b = {ids.data(), targets.data(), batch, seq};
  }
  std::vector<int32_t> ids, targets;
  Batch b{};
};

// ||ours - ref||_2 / ||ref||_2 over n values.
inline double relative_l2(const float* ours, const float* ref, int64_t n) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff += (double(ours[i]) - ref[i]) * (double(ours[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

// The worst relative L2 over every position between the logits of `ids` run in `chunks` through
// an InferState's decode memory (context and max_chunk its sizes) and `full`, one forward pass's
// [ids.size(), vocab].
inline double chunked_decode_error(const Weights& w, const std::vector<int32_t>& ids,
                                   const std::vector<int>& chunks, const std::vector<float>& full,
                                   int context, int max_chunk) {
  const int V = w.config().vocab_size;
  InferState infer(w, context, max_chunk);
  std::vector<float> logits(ids.size() * size_t(V));
  int done = 0;
  for (int n : chunks) {
    infer.forward(ids.data() + done, n, logits.data() + size_t(done) * V);
    done += n;
  }
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p)
    worst = std::max(worst, relative_l2(logits.data() + p * V, full.data() + p * V, V));
  return worst;
}

}  // namespace gattn
