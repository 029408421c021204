#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace gattn::byte_level {

namespace {

struct Tables {
  std::array<uint32_t, 256> codepoint{};
  std::array<std::string, 256> utf8;
  std::array<int16_t, 512> byte_of_codepoint{};  // every table code point is below 0x144
};

Tables build() {
  Tables t;
  t.byte_of_codepoint.fill(-1);
  const auto prints_as_itself = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    t.codepoint[b] = prints_as_itself(b) ? uint32_t(b) : uint32_t(256 + next++);
    utf8::append(t.utf8[b], t.codepoint[b]);
    t.byte_of_codepoint[t.codepoint[b]] = int16_t(b);
  }
  return t;
}

const Tables& tables() {
  static const Tables t = build();
  return t;
}

}  // namespace

uint32_t codepoint_of_byte(uint8_t byte) { return tables().codepoint[byte]; }

std::string token_string(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.utf8[static_cast<uint8_t>(c)];
  return out;
}

bool token_bytes(std::string_view token, std::string& bytes) {
  const Tables& t = tables();
  bytes.clear();
  bool all_in_table = true;
  for (size_t pos = 0; pos < token.size();) {
    uint32_t cp = 0;
    size_t n = utf8::decode(token, pos, &cp);
    if (n == 0) {  // not reachable from parsed JSON, which is valid UTF-8; keep the byte as is
      bytes += token[pos++];
      all_in_table = false;
      continue;
    }
    if (cp < t.byte_of_codepoint.size() && t.byte_of_codepoint[cp] >= 0) {
      bytes += static_cast<char>(t.byte_of_codepoint[cp]);
    } else {
      bytes.append(token.substr(pos, n));
      all_in_table = false;
    }
    pos += n;
  }
  return all_in_table;
}

}  // namespace gattn::byte_level
