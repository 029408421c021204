#include "infer/generate.h"

#include <algorithm>
#include <chrono>

#include "util/error.h"

namespace gattn {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The positions the run needs: the prompt's and max_tokens; an error when they do not fit.
int checked_context(const Config& c, const std::vector<uint32_t>& prompt,
                    const GenerateOptions& o) {
  if (prompt.empty()) fail("generate: the prompt has no tokens");
  if (o.max_tokens < 1) fail("max_tokens must be at least 1, got ", o.max_tokens);
  const int64_t needed = int64_t(prompt.size()) + o.max_tokens;
  if (needed > c.max_position_embeddings)
    fail("the prompt (", prompt.size(), " tokens) plus max_tokens (", o.max_tokens,
         ") exceeds the model's context of ", c.max_position_embeddings, " positions");
  for (uint32_t id : prompt)
    if (id >= uint32_t(c.vocab_size))
      fail("the prompt has token id ", id, ", beyond the model's vocab_size ", c.vocab_size);
  return int(needed);
}
}  // namespace

Generation::Generation(const Weights& weights, const Tokenizer& tokenizer,
                       std::vector<uint32_t> prompt, const GenerateOptions& o,
                       std::function<void(std::string_view)> on_text)
    : o_(o),
      prompt_(prompt.begin(), prompt.end()),
      chunk_(std::max(1, std::min<int>(o.prefill_chunk, int(prompt.size())))),
      state_(weights, checked_context(weights.config(), prompt, o), chunk_, o.keys_values),
      logits_(weights.config().vocab_size),
      continuation_(tokenizer, prompt,
                    {.max_tokens = o.max_tokens,
                     .sampling = o.sampling,
                     .stop = o.stop,
                     .end_tokens = o.end_tokens},
                    std::move(on_text)) {
  state_.set_exec(o.exec);
}

bool Generation::step() {
  if (prefilled_ < prompt_.size()) {
    const auto t0 = Clock::now();
    const int n = int(std::min<size_t>(chunk_, prompt_.size() - prefilled_));
    state_.forward_last(prompt_.data() + prefilled_, n, logits_.data());
    prefilled_ += n;
    prefill_seconds_ += seconds_since(t0);
    return true;
  }
  if (done()) return false;
  const auto t0 = Clock::now();
  if (continuation_.next(logits_)) {
    const int32_t id = int32_t(continuation_.last());
    state_.forward_last(&id, 1, logits_.data());
  }
  decode_seconds_ += seconds_since(t0);
  return !done();
}

GenerateResult Generation::result() const {
  GenerateResult r;
  r.tokens = continuation_.tokens();
  r.text = continuation_.text();
  r.finish_reason = continuation_.finish_reason();
  r.prompt_tokens = int(prompt_.size());
  r.prefill_seconds = prefill_seconds_;
  r.decode_seconds = decode_seconds_;
  r.working_set_bytes = state_.batched().activations().bytes();
  r.decode_memory_bytes = state_.batched().decode_memory_bytes();
  return r;
}

GenerateResult generate(const Weights& weights, const Tokenizer& tokenizer,
                        const std::vector<uint32_t>& prompt, const GenerateOptions& o,
                        const std::function<void(std::string_view)>& on_text) {
  Generation generation(weights, tokenizer, prompt, o, on_text);
  while (generation.step()) {
  }
  return generation.result();
}

}  // namespace gattn
