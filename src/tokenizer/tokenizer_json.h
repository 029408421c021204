// Hugging Face tokenizer.json <-> TokenizerSpec. Reading accepts exactly what the Tokenizer can
// reproduce (byte-level BPE; NFC or no normalizer; Split and ByteLevel pre-tokenizers) and names
// the file and the field of anything else.
#pragma once
#include <string>

#include "tokenizer/tokenizer_spec.h"

namespace gattn {

TokenizerSpec read_tokenizer_json(const std::string& path);
// Parses `text` as the content of `origin` (for tests and for reading from memory).
TokenizerSpec parse_tokenizer_json(const std::string& text, const std::string& origin);

// The file's text: HF's layout, one vocab entry and one merge per line.
std::string tokenizer_json_text(const TokenizerSpec& spec);

}  // namespace gattn
