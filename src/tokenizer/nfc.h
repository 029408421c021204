// Unicode NFC (canonical composition) as Hugging Face `tokenizers` computes it, for tokenizer.json
// files with an NFC normalizer (Qwen2's). utf8proc does the work; code points whose normalisation
// is newer than Unicode 9.0 (HF's normaliser predates them, see unicode_tables.h) are left alone,
// as unassigned ones would be. Bytes that are not well-formed UTF-8 pass through unchanged and
// nothing composes across them.
#pragma once
#include <string>
#include <string_view>

namespace gattn {

// NFC of `text`, appended to `out`.
void append_nfc(std::string_view text, std::string& out);

}  // namespace gattn
