#include "tokenizer/nfc.h"

#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace gattn {

namespace {

void append_utf8proc_nfc(std::string_view text, std::string& out) {
  if (text.empty()) return;
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          utf8proc_ssize_t(text.size()), &result,
                                          utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) fail("NFC normalisation failed: ", utf8proc_errmsg(n));
  out.append(reinterpret_cast<const char*>(result), size_t(n));
  std::free(result);
}

// A code point that acts as unassigned for HF's NFC.
bool opaque(uint32_t cp) {
  return cp >= unicode_tables::normalization_after_unicode9.front().first &&
         unicode_tables::contains(unicode_tables::normalization_after_unicode9, cp);
}

}  // namespace

void append_nfc(std::string_view text, std::string& out) {
  // Every code point below U+0300 is its own NFC and composes with nothing before it; a lead byte
  // below 0xCC starts such a code point, so text without a byte >= 0xCC is already NFC.
  bool plain = true;
  for (char c : text)
    if (static_cast<uint8_t>(c) >= 0xCC) {
      plain = false;
      break;
    }
  if (plain) {
    out.append(text);
    return;
  }
  // An invalid byte or an opaque code point is a starter that composes with nothing and blocks
  // reordering, so NFC of the text is NFC of the stretches between them, with them kept as they
  // are.
  size_t stretch = 0, pos = 0;
  uint32_t cp = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t n = utf8::decode(text, pos, &cp);
    if (n > 0 && !opaque(cp)) {
      pos += n;
      continue;
    }
    if (n == 0) n = 1;
    append_utf8proc_nfc(text.substr(stretch, pos - stretch), out);
    out.append(text.substr(pos, n));
    pos += n;
    stretch = pos;
  }
  append_utf8proc_nfc(text.substr(stretch), out);
}

}  // namespace gattn
