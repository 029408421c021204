// What one generating sequence does with each step's logits: samples the next token, ends at
// max_tokens, an end token or a stop string, and streams its text in whole UTF-8 characters,
// never a part of a stop string. gattn generate and the server's scheduler share it.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "infer/sampler.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

struct ContinuationOptions {
  int max_tokens = 128;
  SamplingOptions sampling = {};
  std::vector<std::string> stop = {};     // generation ends before the first of these strings
  std::vector<uint32_t> end_tokens = {};  // generation ends after one of these ids (not printed)
};

// The generated text so far, holding back what could still become a stop string and the bytes
// of a UTF-8 character not yet complete. Each append costs its own bytes and the longest stop
// string, never the whole text again.
class TextStream {
 public:
  TextStream(std::vector<std::string> stop, std::function<void(std::string_view)> out)
      : stop_(std::move(stop)), out_(std::move(out)) {
    for (const std::string& s : stop_) holdback_ = std::max(holdback_, s.size());
  }
  // Appends the bytes of one token; returns true when the text now holds a stop string (then it
  // is cut before it).
  bool append(std::string_view bytes);
  // Emits what was held back.
  void finish();
  const std::string& text() const { return text_; }

 private:
  std::vector<std::string> stop_;
  std::function<void(std::string_view)> out_;
  std::string text_;
  size_t holdback_ = 0, emitted_ = 0;
};

class Continuation {
 public:
  Continuation(const Tokenizer& tokenizer, std::span<const uint32_t> prompt,
               const ContinuationOptions& options,
               std::function<void(std::string_view)> on_text = {});
  // Samples a token from the logits of the last position (modified in place by the repeat
  // penalty). Returns true while generation goes on: then last() is the next input token.
  bool next(std::span<float> logits);
  // Ends generation now (e.g. max_tokens 0, or a time limit) with this reason.
  void end(std::string reason);

  bool done() const { return !finish_reason_.empty(); }
  uint32_t last() const { return tokens_.back(); }
  const std::vector<uint32_t>& tokens() const { return tokens_; }      // end token included
  const std::string& text() const { return stream_.text(); }           // cut before a stop string
  const std::string& finish_reason() const { return finish_reason_; }  // "length" or "stop"
  bool end_token() const { return end_token_; }  // the last token is an end token (not text)
  // Tokens decoded so far: each generated token once (the text grows by its bytes).
  int64_t decoded_tokens() const { return decoded_tokens_; }

 private:
  const Tokenizer& tokenizer_;
  ContinuationOptions o_;
  Sampler sampler_;
  std::vector<uint32_t> history_, tokens_;
  std::string finish_reason_;
  bool end_token_ = false;
  int64_t decoded_tokens_ = 0;
  TextStream stream_;
};

}  // namespace gattn
