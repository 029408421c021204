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

// Bytes of `text` up to the last whole UTF-8 character.
size_t whole_characters(std::string_view text) {
  size_t end = text.size();
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    const unsigned char c = text[text.size() - back];
    if ((c & 0xC0) != 0x80) {  // the lead byte of the last character
      const size_t length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      if (length > back) end = text.size() - back;
      break;
    }
  }
  return end;
}

// Streams generated text, holding back what could still become a stop string.
class TextStream {
 public:
  TextStream(const std::vector<std::string>& stop, const std::function<void(std::string_view)>& out)
      : stop_(stop), out_(out) {
    for (const std::string& s : stop) holdback_ = std::max(holdback_, s.size());
  }
  // The whole text so far; returns true when it holds a stop string (then cut before it).
  bool update(std::string& text) {
    size_t cut = std::string::npos;
    for (const std::string& s : stop_) cut = std::min(cut, text.find(s));
    const bool stopped = cut != std::string::npos;
    if (stopped) text.resize(cut);
    size_t ready = whole_characters(text);
    if (!stopped) ready = ready > holdback_ ? std::min(ready, text.size() - holdback_) : 0;
    ready = whole_characters(std::string_view(text).substr(0, ready));
    if (ready > emitted_ && out_) out_(std::string_view(text).substr(emitted_, ready - emitted_));
    emitted_ = std::max(emitted_, ready);
    return stopped;
  }
  void finish(const std::string& text) {
    if (text.size() > emitted_ && out_) out_(std::string_view(text).substr(emitted_));
    emitted_ = text.size();
  }

 private:
  const std::vector<std::string>& stop_;
  const std::function<void(std::string_view)>& out_;
  size_t holdback_ = 0, emitted_ = 0;
};
}  // namespace

std::string chatml_prompt(const Tokenizer& tokenizer, const std::string& user,
                          const std::string& system) {
  for (const char* token : {"<|im_start|>", "<|im_end|>"})
    if (!tokenizer.token_to_id(token))
      fail(tokenizer.origin(), ": --chat needs the ChatML token ", token,
           ", which this tokenizer does not have");
  std::string prompt;
  if (!system.empty()) prompt += "<|im_start|>system\n" + system + "<|im_end|>\n";
  return prompt + "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
}

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
  Sampler sampler(o.sampling);
  GenerateResult r;
  r.prompt_tokens = int(prompt.size());
  const int chunk = std::max(1, std::min<int>(o.prefill_chunk, int(prompt.size())));
  InferState state(weights, int(needed), chunk);
  std::vector<int32_t> ids(prompt.begin(), prompt.end());
  std::vector<uint32_t> history(prompt);
  std::vector<float> logits(c.vocab_size);

  const auto t0 = Clock::now();
  for (size_t done = 0; done < ids.size(); done += chunk) {
    const int n = int(std::min<size_t>(chunk, ids.size() - done));
    state.forward_last(ids.data() + done, n, logits.data());
  }
  r.prefill_seconds = seconds_since(t0);

  const auto t1 = Clock::now();
  TextStream stream(o.stop, on_text);
  r.finish_reason = "length";
  for (int i = 0; i < o.max_tokens; ++i) {
    const uint32_t next = sampler.next(logits, history);
    r.tokens.push_back(next);
    history.push_back(next);
    if (std::find(o.end_tokens.begin(), o.end_tokens.end(), next) != o.end_tokens.end()) {
      r.finish_reason = "stop";
      break;
    }
    r.text = tokenizer.decode(std::span(r.tokens));
    if (stream.update(r.text)) {
      r.finish_reason = "stop";
      break;
    }
    if (i + 1 < o.max_tokens) {
      const int32_t id = int32_t(next);
      state.forward_last(&id, 1, logits.data());
    }
  }
  stream.finish(r.text);
  r.decode_seconds = seconds_since(t1);
  return r;
}

}  // namespace gattn
