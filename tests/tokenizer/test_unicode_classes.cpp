// Every general category a pre-tokenizer pattern may name (\p{L}, \p{M}, \p{Nd}, ...) holds
// exactly the code points of Unicode 16.0, the version HF tokenizers' Oniguruma follows:
// tests/fixtures/tokenizer/unicode_classes.txt (written from PyPI unicodedata2 16.0.0 by
// tools/tokenizer_reference/make_unicode_tables.py, which checks it against HF's classes).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sample.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace gattn {
namespace {

using Members = std::vector<bool>;  // indexed by code point

constexpr uint32_t kCodepoints = 0x110000;

std::map<std::string, Members> expected_classes() {
  std::ifstream in(testing::fixture_path("unicode_classes.txt"));
  std::map<std::string, Members> classes;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, range;
    fields >> name;
    Members& members = classes.emplace(name, Members(kCodepoints)).first->second;
    while (fields >> range) {
      const size_t dash = range.find('-');
      const uint32_t first = std::stoul(range.substr(0, dash), nullptr, 16);
      const uint32_t last = std::stoul(range.substr(dash + 1), nullptr, 16);
      for (uint32_t cp = first; cp <= last; ++cp) members[cp] = true;
    }
  }
  return classes;
}

// The members of \p{name} as the pre-tokenizer sees them: every code point (surrogates are no
// text) followed by a separator outside the class; a piece of one code point is a match.
Members pretokenizer_members(const std::string& name, uint32_t separator) {
  std::string text;
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    utf8::append(text, cp);
    utf8::append(text, separator);
  }
  const PreTokenizer p({{"\\p{" + name + "}", "test", false}});
  Members members(kCodepoints);
  p.split(text, [&](std::string_view piece) {
    uint32_t cp = 0;
    if (utf8::decode(piece, 0, &cp) == piece.size() && cp != separator) members[cp] = true;
  });
  return members;
}

TEST(UnicodeClasses, EveryGeneralCategoryIsUnicode16AsInHf) {
  const std::map<std::string, Members> expected = expected_classes();
  ASSERT_EQ(expected.size(), 36u);
  for (const auto& [name, members] : expected) {
    const uint32_t separator = members['!'] ? 'a' : '!';
    const Members actual = pretokenizer_members(name, separator);
    for (uint32_t cp = 0; cp < kCodepoints; ++cp)
      if (actual[cp] != members[cp]) {
        ADD_FAILURE() << "\\p{" << name << "}: U+" << std::hex << cp << " is "
                      << (actual[cp] ? "" : "not ") << "a member, unlike in Unicode 16.0";
        break;
      }
  }
  // U+0897 (Arabic pepet, a combining mark new in Unicode 15.0) split "x\u0897y" in two.
  EXPECT_TRUE(expected.at("M")[0x897]);
  EXPECT_TRUE(expected.at("Mn")[0x897]);
}

TEST(UnicodeClasses, ANewCombiningMarkStaysInItsWordAsInHf) {
  // The Qwen3.5-style letter class [\p{L}\p{M}]: HF keeps "x\u0897y" one piece.
  const PreTokenizer p({{R"([\p{L}\p{M}]+|[^\p{L}\p{M}]+)", "test", false}});
  std::vector<std::string> pieces;
  p.split("x\u0897y", [&](std::string_view piece) { pieces.emplace_back(piece); });
  EXPECT_EQ(pieces, std::vector<std::string>{"x\u0897y"});
}

}  // namespace
}  // namespace gattn
