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
#include "io/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

namespace gattn {

TokenizerSpec gguf_tokenizer_spec(const GgufReader& gguf);
Tokenizer gguf_tokenizer(const std::string& path);

// The reverse, for a model of `vocab_size` embedding rows: tokenizer.ggml.* of `spec` (its
// pre-tokenizer one of those above, named by its regex; ids the model has and the tokenizer does
// not fill as unused "[PAD<id>]" tokens; added tokens as control (special) or user-defined;
// eos and padding: <|endoftext|> or <|im_end|> where the tokenizer has one). A normalizer that
// differs from what the name stands for is noted in `log`: readers of the file will (or will not)
// apply NFC where the tokenizer did not (or did). Error: another pre-tokenizer, or more tokens
// than the model has rows.
void add_gguf_tokenizer(const TokenizerSpec& spec, int64_t vocab_size, GgufWriter& out,
                        LogSink& log);

}  // namespace gattn
