// Added tokens (specials such as <|endoftext|>) are cut out of the text before anything else, as
// Hugging Face does: at each position the longest added token that starts there wins, and the
// leftmost position wins over later ones (Aho-Corasick "leftmost-longest").
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

class AddedTokenMatcher {
 public:
  struct Token {
    std::string content;
    uint32_t id;
  };
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<Token> tokens);

  bool empty() const { return tokens_.empty(); }

  // Calls on_text(piece) for the text between added tokens and on_token(id) for each added token,
  // in order. Empty pieces are skipped.
  template <typename OnText, typename OnToken>
  void split(std::string_view text, OnText&& on_text, OnToken&& on_token) const {
    split_where(
        text, [](size_t, size_t) { return true; }, on_text, on_token);
  }
  // As split(), but a token is matched at [begin, end) of `text` only where allow(begin, end).
  template <typename Allow, typename OnText, typename OnToken>
  void split_where(std::string_view text, Allow&& allow, OnText&& on_text,
                   OnToken&& on_token) const {
    if (tokens_.empty()) {
      if (!text.empty()) on_text(text);
      return;
    }
    size_t piece_start = 0;
    for (size_t pos = 0; pos < text.size();) {
      const Token* match =
          first_byte_[static_cast<uint8_t>(text[pos])] ? longest_at(text, pos) : nullptr;
      if (match == nullptr || !allow(pos, pos + match->content.size())) {
        ++pos;
        continue;
      }
      if (pos > piece_start) on_text(text.substr(piece_start, pos - piece_start));
      on_token(match->id);
      pos += match->content.size();
      piece_start = pos;
    }
    if (piece_start < text.size()) on_text(text.substr(piece_start));
  }

 private:
  const Token* longest_at(std::string_view text, size_t pos) const;

  std::vector<Token> tokens_;  // longest first, so the first one that matches is the longest
  std::array<bool, 256> first_byte_{};
};

}  // namespace gattn
