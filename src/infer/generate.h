// Text generation with a KV cache: the prompt is prefilled in chunks, then one token at a time is
// sampled, decoded and streamed, until max_tokens, an end token or a stop string.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "infer/continuation.h"
#include "infer/sampler.h"
#include "model/infer_state.h"
#include "model/weights.h"
#include "ops/exec_context.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

struct GenerateOptions {
  int max_tokens = 128;
  SamplingOptions sampling = {};
  std::vector<std::string> stop = {};        // generation ends before the first of these strings
  std::vector<uint32_t> end_tokens = {};     // generation ends after one of these ids (not printed)
  int prefill_chunk = 256;                   // prompt tokens per forward pass
  ExecContext exec = {};                     // how the passes compute
  CacheDtype keys_values = CacheDtype::f32;  // attention's cached keys and values
};

struct GenerateResult {
  std::vector<uint32_t> tokens;  // generated, the end token included if one ended it
  std::string text;              // their text, cut before a stop string
  std::string finish_reason;     // "length", "stop" (stop string or end token)
  int prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  int64_t working_set_bytes = 0, decode_memory_bytes = 0;  // the inference state's memory plan
};

// One generation run a pass at a time (a prompt chunk, or one generated token), so that a host
// can stop between passes (the Python module's iterator). on_text receives the text as it is
// produced, in whole UTF-8 characters, never a part of a stop string. An error if the prompt and
// max_tokens do not fit in the model's context.
class Generation {
 public:
  Generation(const Weights& weights, const Tokenizer& tokenizer, std::vector<uint32_t> prompt,
             const GenerateOptions& options, std::function<void(std::string_view)> on_text = {});
  // Runs the next pass; false once generation has ended (then result() is final).
  bool step();
  bool done() const { return continuation_.done(); }
  GenerateResult result() const;
  // result()'s parts without its copies
  const std::vector<uint32_t>& tokens() const { return continuation_.tokens(); }
  const std::string& text() const { return continuation_.text(); }
  const std::string& finish_reason() const { return continuation_.finish_reason(); }

 private:
  GenerateOptions o_;
  std::vector<int32_t> prompt_;
  size_t prefilled_ = 0;
  int chunk_;
  InferState state_;
  std::vector<float> logits_;
  Continuation continuation_;
  double prefill_seconds_ = 0, decode_seconds_ = 0;
};

// A whole Generation.
GenerateResult generate(const Weights& weights, const Tokenizer& tokenizer,
                        const std::vector<uint32_t>& prompt, const GenerateOptions& options,
                        const std::function<void(std::string_view)>& on_text = {});

}  // namespace gattn
