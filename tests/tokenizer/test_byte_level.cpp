// GPT-2's byte-to-unicode table, checked against its definition (paper.md: "Tokenizer reference").
#include <gtest/gtest.h>

#include <set>

#include "tokenizer/byte_level.h"

namespace gattn {
namespace {

TEST(ByteLevel, PrintableBytesStandForThemselvesAndTheRestCountUpFrom256) {
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    EXPECT_EQ(byte_level::codepoint_of_byte(uint8_t(b)), printable ? uint32_t(b) : next++) << b;
  }
  EXPECT_EQ(next, 256u + 68u);  // 33 controls and space, DEL, 0x80..0xA0, soft hyphen
}

TEST(ByteLevel, SpaceNewlineAndHighBytesHaveTheirFamiliarForms) {
  EXPECT_EQ(byte_level::token_string(" "), "Ġ");
  EXPECT_EQ(byte_level::token_string("\n"), "Ċ");
  EXPECT_EQ(byte_level::token_string(" the"), "Ġthe");
  EXPECT_EQ(byte_level::token_string("\xE4\xB8\x96"), "ä¸ĸ");  // 世
}

TEST(ByteLevel, EveryByteStringRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  std::string back;
  EXPECT_TRUE(byte_level::token_bytes(byte_level::token_string(all), back));
  EXPECT_EQ(back, all);
  std::set<std::string> forms;
  for (int b = 0; b < 256; ++b) forms.insert(byte_level::token_string(std::string(1, char(b))));
  EXPECT_EQ(forms.size(), 256u);
}

TEST(ByteLevel, CharactersOutsideTheTableDecodeToTheirOwnUtf8AsHfDoes) {
  std::string bytes;
  EXPECT_FALSE(byte_level::token_bytes("a€b", bytes));  // € (U+20AC) is not a byte's character
  EXPECT_EQ(bytes,
            "a\xE2\x82\xAC"
            "b");
}

}  // namespace
}  // namespace gattn
