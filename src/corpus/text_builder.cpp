#include "corpus/text_builder.h"

#include <algorithm>

namespace gattn {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return s.substr(0, p.size()) == p; });
}
bool ends_with_any(std::string_view s, std::initializer_list<std::string_view> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
  });
}

// Punctuation that attaches to the word before it: no space goes in front of it.
bool closes_phrase(std::string_view next) {
  return starts_with_any(
      next, {".", ",", ";", ":", "?", "!", ")", "]", "}", "'", "\"", "\u2019", "\u201D", "\u2026"});
}
// Punctuation that attaches to the word after it: no space goes behind it.
bool opens_phrase(std::string_view text) {
  return ends_with_any(text, {"(", "[", "{", "\u2018", "\u201C", "\u2014"});
}

}  // namespace

void TextBuilder::pending(Pending p) { pending_ = std::max(pending_, p); }

void TextBuilder::space() { pending(Pending::space); }
void TextBuilder::line_break() { pending(Pending::line); }
void TextBuilder::soft_break() { pending(Pending::soft); }

void TextBuilder::flush_before(std::string_view next) {
  const Pending p = pending_;
  pending_ = Pending::none;
  if (out_.empty() || p == Pending::none) return;
  if (p == Pending::line && breaks_ == Breaks::newlines) {
    out_ += '\n';
  } else if (p == Pending::soft) {
    if (!closes_phrase(next) && !opens_phrase(out_)) out_ += ' ';
  } else {
    out_ += ' ';
  }
}

void TextBuilder::text(std::string_view decoded) {
  size_t pos = 0;
  while (pos < decoded.size()) {
    if (is_space(decoded[pos])) {
      pending(Pending::space);
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < decoded.size() && !is_space(decoded[end])) ++end;
    const std::string_view word = decoded.substr(pos, end - pos);
    flush_before(word);
    out_ += word;
    pos = end;
  }
}

std::string TextBuilder::finish() {
  pending_ = Pending::none;
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

}  // namespace gattn
