#include "infer/continuation.h"

#include <algorithm>

namespace gattn {

namespace {
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
}  // namespace

bool TextStream::append(std::string_view bytes) {
  const size_t before = text_.size();
  text_ += bytes;
  // No stop string was in the text before: one found now ends in the new bytes.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_)
    cut = std::min(cut, text_.find(s, before - std::min(before, s.size() - 1)));
  const bool stopped = cut != std::string::npos;
  if (stopped) text_.resize(cut);
  size_t ready = whole_characters(text_);
  if (!stopped) ready = ready > holdback_ ? std::min(ready, text_.size() - holdback_) : 0;
  ready = whole_characters(std::string_view(text_).substr(0, ready));
  if (ready > emitted_ && out_) out_(std::string_view(text_).substr(emitted_, ready - emitted_));
  emitted_ = std::max(emitted_, ready);
  return stopped;
}

void TextStream::finish() {
  if (text_.size() > emitted_ && out_) out_(std::string_view(text_).substr(emitted_));
  emitted_ = text_.size();
}

Continuation::Continuation(const Tokenizer& tokenizer, std::span<const uint32_t> prompt,
                           const ContinuationOptions& options,
                           std::function<void(std::string_view)> on_text)
    : tokenizer_(tokenizer),
      o_(options),
      sampler_(options.sampling),
      history_(prompt.begin(), prompt.end()),
      stream_(options.stop, std::move(on_text)) {
  if (o_.max_tokens < 1) end("length");
}

void Continuation::end(std::string reason) {
  if (done()) return;
  finish_reason_ = std::move(reason);
  stream_.finish();
}

bool Continuation::next(std::span<float> logits) {
  if (done()) return false;
  const uint32_t token = sampler_.next(logits, history_);
  tokens_.push_back(token);
  history_.push_back(token);
  if (std::find(o_.end_tokens.begin(), o_.end_tokens.end(), token) != o_.end_tokens.end()) {
    end_token_ = true;
    end("stop");
    return false;
  }
  ++decoded_tokens_;
  if (stream_.append(tokenizer_.decode(std::span(&token, 1)))) {
    end("stop");
    return false;
  }
  if (int(tokens_.size()) >= o_.max_tokens) {
    end("length");
    return false;
  }
  return true;
}

}  // namespace gattn
