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

void add_gguf_tokenizer(const TokenizerSpec& spec, int64_t vocab_size, GgufWriter& out,
                        LogSink& log) {
  const PreTokenizerOf* of = nullptr;
  if (spec.splits.size() == 1 && !spec.splits[0].literal)
    for (const PreTokenizerOf& p : kPreTokenizers)
      if (!of && spec.splits[0].regex == p.regex) of = &p;
  if (!of || spec.ignore_merges)
    fail(spec.origin,
         ": its pre-tokenizer is none llama.cpp names (gattn writes qwen2, qwen35 "
         "and gpt-2: one Split on their regex, then byte-level)");
  if (of->nfc != spec.nfc)
    log.note(spec.origin, ": the tokenizer ", spec.nfc ? "normalizes" : "does not normalize",
             " to NFC; readers of tokenizer.ggml.pre '", of->pre, "' ",
             of->nfc ? "(gattn, Hugging Face) will" : "will not",
             ": text that is not NFC may tokenize differently");
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(size_t(vocab_size), unused);
  const auto place = [&](uint32_t id, const std::string& token, TokenType type) {
    if (id >= vocab_size)
      fail(spec.origin, ": token id ", id, " ('", token, "') is beyond the model's ", vocab_size,
           " embedding rows");
    tokens[id] = token;
    types[id] = type;
  };
  for (const auto& [token, id] : spec.vocab) place(id, token, normal);
  for (const AddedTokenSpec& a : spec.added_tokens)
    place(a.id, a.content, a.special ? control : user_defined);
  for (int64_t id = 0; id < vocab_size; ++id)
    if (types[size_t(id)] == unused) tokens[size_t(id)] = "[PAD" + std::to_string(id) + "]";
  std::vector<std::string> merges;
  merges.reserve(spec.merges.size());
  for (const auto& [left, right] : spec.merges) merges.push_back(left + " " + right);
  out.add_string("tokenizer.ggml.model", "gpt2");
  out.add_string("tokenizer.ggml.pre", of->pre);
  out.add_strings("tokenizer.ggml.tokens", tokens);
  out.add_i32s("tokenizer.ggml.token_type", types);
  out.add_strings("tokenizer.ggml.merges", merges);
  for (const char* end : {"<|endoftext|>", "<|im_end|>"})
    for (const AddedTokenSpec& a : spec.added_tokens)
      if (a.content == end) {
        out.add_u32("tokenizer.ggml.eos_token_id", a.id);
        out.add_u32("tokenizer.ggml.padding_token_id", a.id);
        out.add_bool("tokenizer.ggml.add_bos_token", false);
        return;
      }
  out.add_bool("tokenizer.ggml.add_bos_token", false);
}

}  // namespace gattn
