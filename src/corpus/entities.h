// Character references in SWORD module text: the XML five, numeric references and the few HTML
// names such modules use. An '&' that does not start a reference is kept as text.
#pragma once
#include <string>
#include <string_view>

namespace gattn {

// Appends `text` to `out` with its character references decoded (as UTF-8). An unknown name or
// a code point that is not a character fails, naming `where`.
void append_decoded(std::string& out, std::string_view text, const std::string& where);

void append_utf8(std::string& out, char32_t code_point);

}  // namespace gattn
