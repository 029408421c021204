// Everything a byte-level BPE tokenizer is made of, in tokenizer.json's own terms (tokens as
// their byte-level strings). Reading, writing and training produce or consume this; the
// Tokenizer builds its fast tables from it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"

namespace gattn {

struct AddedTokenSpec {
  uint32_t id = 0;
  std::string content;  // raw text, not byte-level
  bool special = true;
  bool normalized = false;  // matched after normalisation rather than on the raw text
};

struct TokenizerSpec {
  std::string origin;  // the file it came from (or what made it), for messages
  std::vector<std::pair<std::string, uint32_t>> vocab;      // the BPE model's tokens, in file order
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedTokenSpec> added_tokens;
  std::vector<PreTokenizer::Pattern> splits;  // applied in turn before the byte-level mapping
  bool nfc = false;
  bool ignore_merges = false;  // a word that is itself a token skips the merges (Llama-3 style)
};

}  // namespace gattn
