// The pre-tokenizer: Qwen2's regex on PCRE2 splits as HF's Oniguruma does (expected pieces below
// were printed by HF `tokenizers`), invalid UTF-8 included, and the pieces always cover the text.
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace gattn {
namespace {

std::vector<std::string> split(const PreTokenizer& p, std::string_view text) {
  std::vector<std::string> pieces;
  p.split(text, [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

const PreTokenizer& qwen2() {
  static const PreTokenizer p({{kQwen2Pattern, "test", false}});
  return p;
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Qwen2PatternSplitsAsHf) {
  EXPECT_EQ(split(qwen2(), "Hello, world! It's 2024."),
            (Pieces{"Hello", ",", " world", "!", " It", "'s", " ", "2", "0", "2", "4", "."}));
  EXPECT_EQ(split(qwen2(), "I'M here, you'RE there; it'ſ"),
            (Pieces{"I", "'M", " here", ",", " you", "'RE", " there", ";", " it", "'ſ"}));
  EXPECT_EQ(split(qwen2(), "  leading\n\n\ntrailing   "),
            (Pieces{" ", " leading", "\n\n\n", "trailing", "   "}));
  EXPECT_EQ(split(qwen2(), "x\t\ty \r\n\r\nz"), (Pieces{"x", "\t", "\ty", " \r\n\r\n", "z"}));
  EXPECT_EQ(split(qwen2(), "数字123と漢字"), (Pieces{"数字", "1", "2", "3", "と漢字"}));
  EXPECT_EQ(split(qwen2(), "...!!!\n\nok"), (Pieces{"...!!!\n\n", "ok"}));
  EXPECT_EQ(split(qwen2(), "a  \n b"), (Pieces{"a", "  \n", " b"}));
  EXPECT_EQ(split(qwen2(), "🙂🙂 hi😀"), (Pieces{"🙂🙂", " hi", "😀"}));
  EXPECT_EQ(split(qwen2(), "١٢x"), (Pieces{"١", "٢", "x"}));
}

TEST(PreTokenizer, WhitespaceIsOnigurumasNotPcre2s) {
  // HF: U+00A0, U+3000, U+2028, U+0085 are \s and glue to the next letter; U+180E is not \s.
  EXPECT_EQ(split(qwen2(), "a\u00a0b\u3000c\u2028d\u0085e\u180ef"),
            (Pieces{"a", "\u00a0b", "\u3000c", "\u2028d", "\u0085e", "\u180ef"}));
  EXPECT_EQ(split(qwen2(), "a\u180e\t b"), (Pieces{"a", "\u180e", "\t", " b"}));
  EXPECT_EQ(split(qwen2(), "a\u3000\t b"), (Pieces{"a", "\u3000\t", " b"}));
}

TEST(PreTokenizer, LettersNewerThanPcre2sUnicodeAreLettersAsInHf) {
  // U+1E030 (Unicode 15.0) and U+2EBF0 (15.1) are letters to HF; PCRE2 10.42 knows Unicode 14.
  EXPECT_EQ(split(qwen2(), "\U0001E030\U0001E031; \U0002EBF0!"),
            (Pieces{"\U0001E030\U0001E031", ";", " \U0002EBF0", "!"}));
  EXPECT_EQ(split(qwen2(), "\U00016130\U00016131"),
            (Pieces{"\U00016130", "\U00016131"}));  // digits
}

TEST(PreTokenizer, PatternRewriteSpellsOutOnigurumaClasses) {
  const std::string out = oniguruma_compatible(R"([^\s\p{L}]\s+(?!\S)[\]\s])");
  EXPECT_EQ(out.find("\\s"), std::string::npos);
  EXPECT_NE(out.find("[^\\x{9}-\\x{D}\\x{85}\\p{Z}\\p{L}\\x{1C89}-\\x{1C8A}"), std::string::npos);
  EXPECT_NE(out.find("(?![^\\x{9}-\\x{D}\\x{85}\\p{Z}])"), std::string::npos);
  EXPECT_NE(out.find("[\\]\\x{9}-\\x{D}\\x{85}\\p{Z}]"), std::string::npos);
  EXPECT_EQ(oniguruma_compatible(R"(a\\s\x{73})"), R"(a\\s\x{73})");  // an escaped backslash
}

TEST(PreTokenizer, InvalidUtf8RunsArePiecesOfTheirOwn) {
  EXPECT_EQ(split(qwen2(),
                  "a\xFF"
                  "b"),
            (Pieces{"a", "\xFF", "b"}));
  EXPECT_EQ(split(qwen2(), "abc\xC3\xFF\xFE def"), (Pieces{"abc", "\xC3\xFF\xFE", " def"}));
  // A truncated 3-byte character, a surrogate and an overlong '/' are invalid too.
  EXPECT_EQ(split(qwen2(), "x\xE4\xB8 \xED\xA0\x80\xC0\xAFy"),
            (Pieces{"x", "\xE4\xB8", " ", "\xED\xA0\x80\xC0\xAF", "y"}));
}

TEST(PreTokenizer, PiecesCoverAnyBytesExactly) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> atoms = {"a",  "Z",    " ",    "\n",     "'s",   "7",
                                          "!",  "\t",   "é",    "世",     "\xFF", "\xE4",
                                          "\r", "🙂", "\xC3", " \u3000"};
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int n = int(rng() % 40);
    for (int i = 0; i < n; ++i)
      text += rng() % 4 == 0 ? std::string(1, char(rng())) : atoms[rng() % atoms.size()];
    std::string joined;
    for (const std::string& piece : split(qwen2(), text)) {
      EXPECT_FALSE(piece.empty());
      joined += piece;
    }
    ASSERT_EQ(joined, text);
  }
}

TEST(PreTokenizer, HugeRunsOfOneClassDoNotExhaustTheMatcher) {
  const std::string spaces(2'000'000, ' ');
  EXPECT_EQ(split(qwen2(), spaces + "x"), (Pieces{spaces.substr(1), " x"}));
  const std::string letters(2'000'000, 'q');
  EXPECT_EQ(split(qwen2(), letters), (Pieces{letters}));
}

TEST(PreTokenizer, LaterPatternsSplitThePiecesOfEarlierOnesAndLiteralsAreText) {
  const PreTokenizer p({{"\\s+", "first", false}, {"b.", "second", true}});
  EXPECT_EQ(split(p, "ab.c  xb.b.y"), (Pieces{"a", "b.", "c", "  ", "x", "b.", "b.", "y"}));
  EXPECT_EQ(split(PreTokenizer(), "no patterns"), (Pieces{"no patterns"}));
}

TEST(PreTokenizer, EmptyMatchesCutTheTextAsInHf) {
  // HF: Split(Regex("x*")) on "abxxcx" gives a, b, xx, c, x; Split(Regex("(?=b)")) on "abab"
  // gives a, ba, b.
  EXPECT_EQ(split(PreTokenizer({{"x*", "test", false}}), "abxxcx"),
            (Pieces{"a", "b", "xx", "c", "x"}));
  EXPECT_EQ(split(PreTokenizer({{"(?=b)", "test", false}}), "abab"), (Pieces{"a", "ba", "b"}));
  EXPECT_EQ(split(PreTokenizer({{"(?=b)", "test", false}}),
                  "a\xFF"
                  "b\xFF"),
            (Pieces{"a\xFF", "b\xFF"}));
}

TEST(PreTokenizer, AnUncompilablePatternNamesItsOrigin) {
  try {
    PreTokenizer({{"(unclosed", "tok.json: pre_tokenizer.pattern.Regex", false}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tok.json: pre_tokenizer.pattern.Regex: PCRE2 cannot "
                                         "compile the pattern: missing closing parenthesis"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gattn
