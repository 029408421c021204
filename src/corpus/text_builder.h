// Assembles plain text from the pieces left between markup tags: collapses whitespace, turns
// paragraph and line breaks into a newline or a space, and puts a space where a dropped footnote
// stood between two words (SWORD modules often store "God<note>...</note>created").
#pragma once
#include <string>
#include <string_view>

namespace gattn {

class TextBuilder {
 public:
  enum class Breaks { spaces, newlines };
  explicit TextBuilder(Breaks breaks) : breaks_(breaks) {}

  void text(std::string_view decoded);  // whitespace runs inside collapse to one space
  void space();                         // a word boundary
  void line_break();                    // a paragraph or line boundary
  // Where dropped content stood: a space, unless the next text closes a phrase (". , ; ” ...")
  // or the text so far ends with an opening bracket or quote.
  void soft_break();
  // The text, without leading or trailing whitespace.
  std::string finish();

 private:
  enum class Pending { none, soft, space, line };
  void pending(Pending p);
  void flush_before(std::string_view next);

  Breaks breaks_;
  Pending pending_ = Pending::none;
  std::string out_;
};

}  // namespace gattn
