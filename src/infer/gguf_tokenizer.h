// The tokenizer a llama.cpp GGUF file carries in its metadata (tokenizer.ggml.*), as the Hugging
// Face tokenizer it was converted from: byte-level BPE (`tokenizer.ggml.model` "gpt2") with the
// file's tokens (ids = positions), merges and token types (control tokens become special added
// tokens, user-defined ones plain added tokens, unused fillers no token at all), and the
// pre-tokenizer `tokenizer.ggml.pre` names, with the regex and normalizer of the tokenizer.json
// it stands for: "qwen2" (Qwen2/Qwen3: NFC and Qwen's regex), "qwen35" (Qwen3.5: NFC and its
// regex with \p{M}), "gpt-2" or "default" (GPT-2's ByteLevel regex, no normalizer). llama.cpp
// itself applies no NFC: on text that is not NFC, its ids and Hugging Face's (these) differ.
// Other models and pre-tokenizers are refused by name.
#pragma once
#include <string>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

TokenizerSpec gguf_tokenizer_spec(const GgufReader& gguf);
Tokenizer gguf_tokenizer(const std::string& path);

}  // namespace gattn
