#include "infer/generate.h"

#include <algorithm>
#include <chrono>

#include "model/infer_state.h"
#include "util/error.h"

namespace gattn {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

GenerateResult generate(const Weights& weights, const Tokenizer& tokenizer,
                        const std::vector<uint32_t>& prompt, const GenerateOptions& o,
                        const std::function<void(std::string_view)>& on_text) {
  const Config& c = weights.config();
  if (prompt.empty()) fail("generate: the prompt has no tokens");
  if (o.max_tokens < 1) fail("max_tokens must be at least 1, got ", o.max_tokens);
  const int64_t needed = int64_t(prompt.size()) + o.max_tokens;
  if (needed > c.max_position_embeddings)
    fail("the prompt (", prompt.size(), " tokens) plus max_tokens (", o.max_tokens,
         ") exceeds the model's context of ", c.max_position_embeddings, " positions");
  for (uint32_t id : prompt)
    if (id >= uint32_t(c.vocab_size))
      fail("the prompt has token id ", id, ", beyond the model's vocab_size ", c.vocab_size);
  GenerateResult r;
  r.prompt_tokens = int(prompt.size());
  const int chunk = std::max(1, std::min<int>(o.prefill_chunk, int(prompt.size())));
  InferState state(weights, int(needed), chunk, o.keys_values);
  state.set_exec(o.exec);
  r.working_set_bytes = state.batched().activations().bytes();
  r.decode_memory_bytes = state.batched().decode_memory_bytes();
  std::vector<int32_t> ids(prompt.begin(), prompt.end());
  std::vector<float> logits(c.vocab_size);

  const auto t0 = Clock::now();
  for (size_t done = 0; done < ids.size(); done += chunk) {
    const int n = int(std::min<size_t>(chunk, ids.size() - done));
    state.forward_last(ids.data() + done, n, logits.data());
  }
  r.prefill_seconds = seconds_since(t0);

  const auto t1 = Clock::now();
  Continuation continuation(tokenizer, prompt,
                            {.max_tokens = o.max_tokens,
                             .sampling = o.sampling,
                             .stop = o.stop,
                             .end_tokens = o.end_tokens},
                            on_text);
  while (continuation.next(logits)) {
    const int32_t id = int32_t(continuation.last());
    state.forward_last(&id, 1, logits.data());
  }
  r.decode_seconds = seconds_since(t1);
  r.tokens = continuation.tokens();
  r.text = continuation.text();
  r.finish_reason = continuation.finish_reason();
  return r;
}

}  // namespace gattn
