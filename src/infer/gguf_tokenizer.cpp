#include "infer/gguf_tokenizer.h"

#include "util/error.h"

namespace gattn {

namespace {

// llama.cpp's token types (llama_token_type).
enum TokenType : int64_t {
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6
};

// The pre-tokenizer regex of the tokenizer.json each `tokenizer.ggml.pre` stands for (llama.cpp's
// llama-vocab.cpp quotes them as "original regex from tokenizer.json"), and whether that file
// normalizes to NFC.
struct PreTokenizerOf {
  const char* pre;
  const char* regex;
  bool nfc;
};
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr PreTokenizerOf kPreTokenizers[] = {{"qwen2", kQwen2, true},
                                             {"qwen35", kQwen35, true},
                                             {"gpt-2", kGpt2, false},
                                             {"default", kGpt2, false}};

}  // namespace

TokenizerSpec gguf_tokenizer_spec(const GgufReader& g) {
  const std::string model = g.get_string("tokenizer.ggml.model");
  if (model != "gpt2")
    fail(g.path(), ": tokenizer.ggml.model is '", model,
         "'; gattn reads byte-level BPE tokenizers ('gpt2')");
  const std::string pre =
      g.has("tokenizer.ggml.pre") ? g.get_string("tokenizer.ggml.pre") : "default";
  const PreTokenizerOf* of = nullptr;
  for (const PreTokenizerOf& p : kPreTokenizers)
    if (pre == p.pre) of = &p;
  if (!of)
    fail(g.path(), ": tokenizer.ggml.pre is '", pre,
         "'; gattn knows qwen2, qwen35, gpt-2 and default");
  const std::vector<std::string>& tokens = g.get_strings("tokenizer.ggml.tokens");
  std::vector<int64_t> types(tokens.size(), normal);
  if (g.has("tokenizer.ggml.token_type")) {
    types = g.get_ints("tokenizer.ggml.token_type");
    if (types.size() != tokens.size())
      fail(g.path(), ": tokenizer.ggml.token_type has ", types.size(), " entries for ",
           tokens.size(), " tokens");
  }
  TokenizerSpec spec;
  spec.origin = g.path() + " (tokenizer.ggml.*)";
  spec.nfc = of->nfc;
  spec.splits.push_back({of->regex, g.path() + ": tokenizer.ggml.pre '" + pre + "'", false});
  for (size_t id = 0; id < tokens.size(); ++id) {
    switch (types[id]) {
      case normal:
      case byte:
      case unknown:
        spec.vocab.emplace_back(tokens[id], uint32_t(id));
        break;
      case control:
      case user_defined:
        // Also a vocabulary entry at its id (as a trained special token is in tokenizer.json):
        // the file does not say whether it was, and no merge makes it either way.
        spec.vocab.emplace_back(tokens[id], uint32_t(id));
        spec.added_tokens.push_back({uint32_t(id), tokens[id], types[id] == control, false});
        break;
      case unused:
        break;
      default:
        fail(g.path(), ": tokenizer.ggml.token_type[", id, "] is ", types[id],
             ", not a llama.cpp token type (1-6)");
    }
  }
  if (g.has("tokenizer.ggml.merges")) {
    for (const std::string& merge : g.get_strings("tokenizer.ggml.merges")) {
      const size_t space = merge.find(' ', 1);
      if (space == std::string::npos || space + 1 >= merge.size())
        fail(g.path(), ": tokenizer.ggml.merges has '", merge,
             "', not two tokens split by a space");
      spec.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
    }
  }
  return spec;
}

Tokenizer gguf_tokenizer(const std::string& path) {
  return Tokenizer::from_spec(gguf_tokenizer_spec(GgufReader(path)));
}

}  // namespace gattn
