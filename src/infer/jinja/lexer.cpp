#include "infer/jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace gattn::jinja {

namespace {
bool space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Where the tag that starts its inside at `from` ends: the position of `close` ("}}" or "%}"),
// string literals skipped; npos when it does not.
size_t tag_end(std::string_view s, size_t from, std::string_view close) {
  for (size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
      if (i >= s.size()) return std::string_view::npos;
    } else if (s.substr(i, close.size()) == close) {
      return i;
    }
  }
  return std::string_view::npos;
}

// Where "{% endraw %}" (with any whitespace control) starts at or after `from`, and where it ends.
std::pair<size_t, size_t> find_endraw(std::string_view s, size_t from) {
  for (size_t i = s.find("{%", from); i != std::string_view::npos; i = s.find("{%", i + 1)) {
    size_t j = i + 2;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    while (j < s.size() && space(s[j])) ++j;
    if (s.substr(j, 6) != "endraw") continue;
    j += 6;
    while (j < s.size() && space(s[j])) ++j;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    if (s.substr(j, 2) == "%}") return {i, j + 2};
  }
  return {std::string_view::npos, 0};
}

int count_lines(std::string_view s) { return int(std::count(s.begin(), s.end(), '\n')); }

class Splitter {
 public:
  Splitter(std::string_view source, const std::string& origin) : s_(source), origin_(origin) {}

  std::vector<Piece> run() {
    while (pos_ < s_.size()) {
      const size_t open = next_tag(pos_);
      if (open == std::string_view::npos) {
        text(s_.substr(pos_));
        break;
      }
      text(s_.substr(pos_, open - pos_));
      tag(open);
    }
    return std::move(pieces_);
  }

 private:
  size_t next_tag(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string_view::npos; i = s_.find('{', i + 1))
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return std::string_view::npos;
  }

  void text(std::string_view t) {
    if (t.empty()) return;
    pieces_.push_back({.kind = Piece::Kind::text, .text = std::string(t), .line = line_});
    line_ += count_lines(t);
  }

  // The text before a tag loses its trailing whitespace ("-"), or (lstrip_blocks, statements
  // and comments) the spaces and tabs between the line's start and the tag.
  void strip_before(char mark, char type) {
    if (pieces_.empty() || pieces_.back().kind != Piece::Kind::text) return;
    std::string& t = pieces_.back().text;
    if (mark == '-') {
      while (!t.empty() && space(t.back())) t.pop_back();
    } else if (mark != '+' && type != '{') {
      const size_t nl = t.rfind('\n');
      const size_t from = nl == std::string::npos ? 0 : nl + 1;
      const bool line_start = nl != std::string::npos || starts_line_;
      if (line_start && t.find_first_not_of(" \t", from) == std::string::npos) t.resize(from);
    }
  }

  void tag(size_t open) {
    const char type = s_[open + 1];
    size_t inner = open + 2;
    const char mark = inner < s_.size() ? s_[inner] : 0;
    if (mark == '-' || mark == '+') ++inner;
    strip_before(mark, type);
    const std::string_view close = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    const size_t end = type == '#' ? s_.find("#}", inner) : tag_end(s_, inner, close);
    if (end == std::string_view::npos)
      fail(origin_, ":", line_, ": '", s_.substr(open, 2), "' is never closed by '", close, "'");
    std::string_view code = s_.substr(inner, end - inner);
    const char right = code.empty() ? 0 : code.back();
    if (right == '-' || right == '+') code.remove_suffix(1);
    size_t after = end + 2;
    const int first_line = line_;
    line_ += count_lines(s_.substr(open, after - open));
    if (type != '#') push_tag(type, code, first_line);
    if (type == '%' && trimmed(code) == "raw") after = raw_block(after);
    after = strip_after(after, right, type);
    starts_line_ = after > 0 && s_[after - 1] == '\n';
    pos_ = after;
  }

  void push_tag(char type, std::string_view code, int line) {
    const Piece::Kind kind = type == '{' ? Piece::Kind::output : Piece::Kind::statement;
    pieces_.push_back({.kind = kind, .text = std::string(code), .line = line});
  }

  // {% raw %}: the text up to {% endraw %} as it stands.
  size_t raw_block(size_t from) {
    pieces_.pop_back();
    const auto [begin, end] = find_endraw(s_, from);
    if (begin == std::string_view::npos)
      fail(origin_, ":", line_, ": {% raw %} is never closed by {% endraw %}");
    text(s_.substr(from, begin - from));
    line_ += count_lines(s_.substr(begin, end - begin));
    return end;
  }

  // After a tag: all whitespace goes ("-"), or (trim_blocks, statements and comments) the first
  // newline.
  size_t strip_after(size_t after, char right, char type) {
    size_t skipped = after;
    if (right == '-') {
      while (skipped < s_.size() && space(s_[skipped])) ++skipped;
    } else if (right != '+' && type != '{') {
      if (s_.substr(after, 2) == "\r\n") {
        skipped += 2;
      } else if (after < s_.size() && s_[after] == '\n') {
        skipped += 1;
      }
    }
    line_ += count_lines(s_.substr(after, skipped - after));
    return skipped;
  }

  static std::string_view trimmed(std::string_view s) {
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
  }

  std::string_view s_;
  const std::string& origin_;
  size_t pos_ = 0;
  int line_ = 1;
  bool starts_line_ = true;
  std::vector<Piece> pieces_;
};

// A Python string literal's value: \n \t \r \\ \' \" \0 \xHH \uHHHH \UHHHHHHHH; other
// backslashes stay as they are.
size_t string_literal(std::string_view code, size_t i, std::string& out, const std::string& where) {
  const char quote = code[i++];
  for (; i < code.size() && code[i] != quote; ++i) {
    if (code[i] != '\\' || i + 1 >= code.size()) {
      out += code[i];
      continue;
    }
    const char e = code[++i];
    const int hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (hex) {
      uint32_t cp = 0;
      const auto r = std::from_chars(
          code.data() + i + 1, code.data() + std::min(code.size(), i + 1 + size_t(hex)), cp, 16);
      if (r.ptr != code.data() + i + 1 + hex || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
        fail(where, ": a bad \\", e, " escape in a string");
      utf8::append(out, cp);
      i += size_t(hex);
      continue;
    }
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case '\n':
        break;
      default:
        out += '\\';
        out += e;
    }
  }
  if (i >= code.size()) fail(where, ": a string is never closed");
  return i + 1;
}
}  // namespace

std::vector<Piece> split_template(std::string_view source, const std::string& origin) {
  // jinja2 drops one newline at the end of a template (keep_trailing_newline is off).
  if (source.ends_with("\r\n")) {
    source.remove_suffix(2);
  } else if (source.ends_with('\n')) {
    source.remove_suffix(1);
  }
  return Splitter(source, origin).run();
}

std::vector<Token> tokenize(std::string_view code, const std::string& where) {
  static constexpr std::string_view kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                              "/",  "%",  "~",  "<",  ">",  "=",  ".", ",", ":",
                                              "|",  "(",  ")",  "[",  "]",  "{",  "}"};
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < code.size()) {
    const char c = code[i];
    if (space(c)) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < code.size() &&
             (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_'))
        ++j;
      tokens.push_back({.kind = Token::Kind::name,
                        .text = std::string(code.substr(i, j - i)),
                        .integer = 0,
                        .number = 0});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < code.size() &&
             (std::isdigit(static_cast<unsigned char>(code[j])) || code[j] == '_'))
        ++j;
      const bool fraction = j + 1 < code.size() && code[j] == '.' &&
                            std::isdigit(static_cast<unsigned char>(code[j + 1]));
      if (fraction || (j < code.size() && (code[j] == 'e' || code[j] == 'E'))) {
        double d = 0;
        const auto r = std::from_chars(code.data() + i, code.data() + code.size(), d);
        if (r.ec != std::errc()) fail(where, ": a bad number '", code.substr(i, 12), "'");
        tokens.push_back({.kind = Token::Kind::number, .text = {}, .integer = 0, .number = d});
        i = size_t(r.ptr - code.data());
      } else {
        std::string digits;
        for (size_t k = i; k < j; ++k)
          if (code[k] != '_') digits += code[k];
        int64_t v = 0;
        const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (r.ec != std::errc()) fail(where, ": the integer ", digits, " is out of range");
        tokens.push_back({.kind = Token::Kind::integer, .text = {}, .integer = v, .number = 0});
        i = j;
      }
    } else if (c == '\'' || c == '"') {
      Token t{.kind = Token::Kind::string, .text = {}, .integer = 0, .number = 0};
      i = string_literal(code, i, t.text, where);
      tokens.push_back(std::move(t));
    } else {
      const auto* op = std::find_if(std::begin(kOps), std::end(kOps), [&](std::string_view o) {
        return code.substr(i, o.size()) == o;
      });
      if (op == std::end(kOps)) fail(where, ": unexpected character '", c, "'");
      tokens.push_back(
          {.kind = Token::Kind::op, .text = std::string(*op), .integer = 0, .number = 0});
      i += op->size();
    }
  }
  tokens.push_back({.kind = Token::Kind::end, .text = {}, .integer = 0, .number = 0});
  return tokens;
}

}  // namespace gattn::jinja
