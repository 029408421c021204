// Passkey retrieval (Mohtashami & Jaggi 2023): a 5-digit key hidden at a random depth in filler
// text of a given length, then "What is the pass key? The pass key is"; the model retrieves it
// when, teacher-forced, its argmax predicts every token of " KEY" (what greedy decoding would
// produce). The long-context test of the paper's extrapolation claim.
#pragma once
#include <cstdint>
#include <vector>

#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

struct PasskeyResult {
  int length = 0;  // tokens per prompt, BOS and answer included
  int trials = 0;
  int retrieved = 0;
  double answer_nats = 0;  // mean over trials of the answer's summed -log p
};

// One result per length; trials draw keys and depths from `seed`, the same for every model.
std::vector<PasskeyResult> passkey_retrieval(const Weights& weights, const Tokenizer& tokenizer,
                                             const std::vector<int>& lengths, int trials,
                                             uint64_t seed);

}  // namespace gattn
