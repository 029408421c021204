#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>
#include <functional>
#include <map>

#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace gattn {

namespace {

// Oniguruma's Unicode \s: U+0009..U+000D, U+0085 and the separators (Zs, Zl, Zp).
constexpr std::string_view kOnigWhitespace = "\\x{9}-\\x{D}\\x{85}\\p{Z}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// A class body with the members of Oniguruma's (Unicode 16.0) general category `c`: PCRE2's own
// property plus what 16.0 added, or every range where 16.0 also removed members.
std::string class_members(const unicode_tables::PropertyClass& c) {
  std::string out = c.complete ? "" : cat("\\p{", c.name, "}");
  for (const auto& r : c.ranges) {
    char range[40];
    std::snprintf(range, sizeof(range), "\\x{%X}-\\x{%X}", r.first, r.last);
    out += range;
  }
  return out;
}

// The class body of `\p{name}` for every general category, made once.
const std::map<std::string, std::string, std::less<>>& category_bodies() {
  static const auto bodies = [] {
    std::map<std::string, std::string, std::less<>> out;
    for (const auto& c : unicode_tables::property_classes)
      out.emplace(std::string(c.name), class_members(c));
    return out;
  }();
  return bodies;
}

// Scratch space for matching, one per thread: matching is const and may run on many threads.
struct ThreadMatchState {
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* big_stack = nullptr;  // made on first need: deep backtracking on huge runs
  pcre2_match_context* big_stack_context = nullptr;
  ~ThreadMatchState() {
    pcre2_match_context_free(big_stack_context);
    pcre2_jit_stack_free(big_stack);
    pcre2_match_data_free(match_data);
  }
  pcre2_match_context* context_with_big_stack() {
    if (big_stack_context == nullptr) {
      big_stack = pcre2_jit_stack_create(64 * 1024, 256 * 1024 * 1024, nullptr);
      big_stack_context = pcre2_match_context_create(nullptr);
      pcre2_jit_stack_assign(big_stack_context, nullptr, big_stack);
    }
    return big_stack_context;
  }
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

std::string oniguruma_compatible(std::string_view pattern) {
  const std::string whitespace(kOnigWhitespace);
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const std::string_view rest = pattern.substr(i);
      const auto replace = [&](size_t length, const std::string& members, bool negated) {
        if (in_class) {
          out += members;
        } else {
          out += cat(negated ? "[^" : "[", members, "]");
        }
        i += length - 1;
      };
      // \p{X} / \P{X} of a general category: its Unicode 16.0 members (other properties, such
      // as scripts, keep PCRE2's meaning).
      const size_t close = rest.find('}');
      const auto category =
          (rest.starts_with("\\p{") || rest.starts_with("\\P{")) && close != std::string_view::npos
              ? category_bodies().find(rest.substr(3, close - 3))
              : category_bodies().end();
      const bool negated_property = rest[1] == 'P';
      // A negated class cannot join an enclosing class; inside one it keeps PCRE2's meaning.
      if (rest.starts_with("\\s")) {
        replace(2, whitespace, false);
      } else if (!in_class && rest.starts_with("\\S")) {
        replace(2, whitespace, true);
      } else if (category != category_bodies().end() && (!in_class || !negated_property)) {
        replace(close + 1, category->second, negated_property);
      } else {
        out += c;
        out += pattern[++i];
      }
      continue;
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
    } else if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t close = pattern.find(":]", i + 2);  // POSIX class such as [:alpha:]
      if (close != std::string_view::npos) {
        out.append(pattern.substr(i + 1, close + 1 - i));
        i = close + 1;
      }
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

PreTokenizer::PreTokenizer(const std::vector<Pattern>& patterns) {
  for (const Pattern& pattern : patterns) {
    const std::string source =
        pattern.literal ? pattern.regex : oniguruma_compatible(pattern.regex);
    const uint32_t options =
        PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (pattern.literal ? PCRE2_LITERAL : PCRE2_UCP);
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto compiled = std::make_unique<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                   options, &error, &offset, nullptr);
    if (compiled->code == nullptr)
      fail(pattern.where, ": PCRE2 cannot compile the pattern: ", pcre2_message(error),
           " at offset ", offset, " of ", source);
    // Without JIT (an unsupported CPU) the interpreter gives the same matches, only slower.
    compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
    compiled_.push_back(std::move(compiled));
  }
}

bool PreTokenizer::find(size_t index, std::string_view text, size_t from, size_t* start,
                        size_t* end) const {
  const Compiled& compiled = *compiled_[index];
  ThreadMatchState& state = thread_match_state();
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc =
      compiled.jit
          ? pcre2_jit_match(compiled.code, subject, text.size(), from, 0, state.match_data, nullptr)
          : pcre2_match(compiled.code, subject, text.size(), from, 0, state.match_data, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_jit_match(compiled.code, subject, text.size(), from, 0, state.match_data,
                         state.context_with_big_stack());
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) fail("tokenizer pre-tokenizer: PCRE2 match failed: ", pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.match_data);
  *start = ovector[0];
  *end = ovector[1];
  return true;
}

size_t PreTokenizer::next_character(std::string_view text, size_t pos) {
  if (pos >= text.size()) return pos + 1;
  uint32_t cp = 0;
  const size_t n = utf8::decode(text, pos, &cp);
  return pos + (n == 0 ? 1 : n);
}

}  // namespace gattn
