// GPT-2's byte-to-unicode table: every byte is shown as one printable character, so a byte-level
// token is a plain string in tokenizer.json. Bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for
// themselves; every other byte b becomes U+0100 + (its rank among those others).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace gattn::byte_level {

// The code point that stands for `byte`.
uint32_t codepoint_of_byte(uint8_t byte);

// The tokenizer.json form of raw bytes: the UTF-8 of each byte's character.
std::string token_string(std::string_view bytes);

// Raw bytes of a tokenizer.json token. A character outside the table contributes its own UTF-8,
// as Hugging Face's ByteLevel decoder does; returns false if there was any such character.
bool token_bytes(std::string_view token, std::string& bytes);

}  // namespace gattn::byte_level
