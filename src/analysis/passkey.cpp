#include "analysis/passkey.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "model/train_state.h"
#include "util/error.h"

namespace gattn {
namespace {

constexpr const char* kIntro =
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
    "I will quiz you about the important information there.";
constexpr const char* kFiller =
    " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
constexpr const char* kQuestion = " What is the pass key? The pass key is";

void append(std::vector<int32_t>& ids, const std::vector<uint32_t>& more) {
  ids.insert(ids.end(), more.begin(), more.end());
}

}  // namespace

std::vector<PasskeyResult> passkey_retrieval(const Weights& weights, const Tokenizer& tokenizer,
                                             const std::vector<int>& lengths, int trials,
                                             uint64_t seed) {
  const std::vector<uint32_t> intro = tokenizer.encode(kIntro);
  const std::vector<uint32_t> filler = tokenizer.encode(kFiller);
  const std::vector<uint32_t> question = tokenizer.encode(kQuestion);
  const int vocab = weights.config().vocab_size;
  TrainState state(weights);
  std::vector<PasskeyResult> results;
  for (const int length : lengths) {
    if (length > weights.config().max_position_embeddings)
      fail("passkey: length ", length, " exceeds the model's context (",
           weights.config().max_position_embeddings, ")");
    std::mt19937_64 rng(seed * 1000003 + uint64_t(length));
    PasskeyResult r;
    r.length = length;
    r.trials = trials;
    std::vector<float> logits;
    for (int trial = 0; trial < trials; ++trial) {
      const std::string key = std::to_string(10000 + rng() % 90000);
      const std::vector<uint32_t> needle = tokenizer.encode(
          " The pass key is " + key + ". Remember it. " + key + " is the pass key.");
      const std::vector<uint32_t> answer = tokenizer.encode(" " + key);
      const int fixed = 1 + int(intro.size() + needle.size() + question.size() + answer.size());
      const int fillers = (length - fixed) / int(filler.size());
      if (fillers < 1)
        fail("passkey: length ", length, " is too short for the prompt (", fixed + filler.size(),
             " tokens at least)");
      const int before = int(rng() % uint64_t(fillers + 1));
      std::vector<int32_t> ids = {int32_t(tokenizer.end_of_text_id())};
      append(ids, intro);
      for (int i = 0; i < fillers; ++i) {
        if (i == before) append(ids, needle);
        append(ids, filler);
      }
      if (before == fillers) append(ids, needle);
      append(ids, question);
      const int answer_at = int(ids.size());
      append(ids, answer);
      // Pad with filler to exactly `length`: the filler after the answer is never scored.
      for (size_t i = 0; ids.size() < size_t(length); ++i)
        ids.push_back(int32_t(filler[i % filler.size()]));
      ids.resize(length);
      for (int32_t id : ids)
        if (id >= vocab)
          fail("passkey: the tokenizer's id ", id, " is beyond the model's vocab_size ", vocab);
      logits.resize(size_t(length) * vocab);
      state.forward({ids.data(), nullptr, 1, length}, logits.data());
      bool all = true;
      for (size_t a = 0; a < answer.size(); ++a) {
        const float* row = &logits[size_t(answer_at + a - 1) * vocab];
        const int predicted = int(std::max_element(row, row + vocab) - row);
        all = all && predicted == int(answer[a]);
        const float top = *std::max_element(row, row + vocab);
        double sum = 0;
        for (int v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - top);
        r.answer_nats += (std::log(sum) + top - row[answer[a]]) / trials;
      }
      r.retrieved += all;
    }
    results.push_back(r);
  }
  return results;
}

}  // namespace gattn
