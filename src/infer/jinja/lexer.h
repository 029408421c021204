// A Jinja template cut into its pieces (text, {{ output }} and {% statement %} tags, comments
// dropped) with Hugging Face's whitespace rules applied, and a tag's inside cut into tokens.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gattn::jinja {

struct Piece {
  enum class Kind { text, output, statement };
  Kind kind = Kind::text;
  std::string text;  // the text, or the tag's inside without its delimiters and - / + marks
  int line = 1;
};

// An Error naming `origin` and the line for an unclosed tag, comment or raw block.
std::vector<Piece> split_template(std::string_view source, const std::string& origin);

struct Token {
  enum class Kind { name, integer, number, string, op, end };
  Kind kind = Kind::end;
  std::string text;  // a name, an operator, or a string literal's value (escapes resolved)
  int64_t integer = 0;
  double number = 0;
};

// The tokens of one tag's inside, ending with an `end` token. `where` prefixes errors.
std::vector<Token> tokenize(std::string_view code, const std::string& where);

}  // namespace gattn::jinja
