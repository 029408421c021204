// Splits text into the pieces that BPE merges within, as Hugging Face's Split pre-tokenizer
// (behaviour "isolated") does with each pattern in turn: every match is a piece and so is every
// stretch between two matches; each piece is split again by the next pattern.
// Patterns are Oniguruma-flavoured (what HF uses) and run on PCRE2 in UTF + UCP mode, rewritten so
// that `\s` and every general category (`\p{L}`, `\p{M}`, `\p{Nd}`, ...) mean what they mean to
// HF's Oniguruma: its whitespace (PCRE2's also holds U+180E) and its Unicode 16.0 (see
// unicode_tables.h). Invalid UTF-8 never matches
// anything (PCRE2_MATCH_INVALID_UTF), so a run of invalid bytes lands between two matches: its own
// piece.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

class PreTokenizer {
 public:
  // `where` names the pattern's origin (file and field) for errors.
  struct Pattern {
    std::string regex;
    std::string where;
    bool literal = false;  // HF's {"String": ...} patterns split on the text itself
  };
  PreTokenizer();
  explicit PreTokenizer(const std::vector<Pattern>& patterns);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Calls visit(piece) for the pieces of `text` in order; together they are exactly `text`.
  template <typename Visit>
  void split(std::string_view text, Visit&& visit) const {
    split_with(0, text, visit);
  }

 private:
  struct Compiled;

  // The first match of pattern `index` in text at or after `from`, if any (it may be empty).
  bool find(size_t index, std::string_view text, size_t from, size_t* start, size_t* end) const;
  // Where the search goes on after an empty match at `pos`: one character further.
  static size_t next_character(std::string_view text, size_t pos);

  template <typename Visit>
  void split_with(size_t index, std::string_view text, Visit& visit) const {
    if (index == compiled_.size()) {
      if (!text.empty()) visit(text);
      return;
    }
    // `pos`: where the text not yet visited starts; an empty match only cuts there, as in HF.
    size_t pos = 0, from = 0, start = 0, end = 0;
    while (from < text.size() && find(index, text, from, &start, &end)) {
      if (start > pos) split_with(index + 1, text.substr(pos, start - pos), visit);
      if (end > start) {
        split_with(index + 1, text.substr(start, end - start), visit);
        pos = from = end;
      } else {
        pos = start;
        from = next_character(text, start);
      }
    }
    if (pos < text.size()) split_with(index + 1, text.substr(pos), visit);
  }

  std::vector<std::unique_ptr<Compiled>> compiled_;
};

// The pattern with Oniguruma's meaning of `\s`, `\S`, `\p{L}`, `\P{L}`, `\p{N}` and `\P{N}` spelled
// out for PCRE2 (exposed for tests). Inside a class, `\S`, `\P{L}` and `\P{N}` keep PCRE2's
// meaning.
std::string oniguruma_compatible(std::string_view pattern);

}  // namespace gattn
