// Byte-level BPE as in GPT-2 and Qwen2, reading and writing Hugging Face tokenizer.json files and
// giving the same ids as HF `tokenizers` (tested on multilingual text): the text is split on added
// tokens, normalised (NFC, when the file asks for it), split by the pre-tokenizer regex, mapped to
// bytes, and each piece's bytes are merged by rank. docs/TOKENIZER.md is the user's guide.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_spec.h"

namespace gattn {

// Qwen2's pre-tokenizer regex: contractions, letters with one leading non-letter, single digits,
// punctuation runs, newlines, whitespace.
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline constexpr const char* kEndOfText = "<|endoftext|>";

struct TrainProgress {
  enum class Stage { counting, merging, done };
  Stage stage = Stage::counting;
  int64_t documents = 0;
  int64_t bytes = 0;
  int64_t unique_words = 0;
  int64_t merges_done = 0;
  int64_t merges_planned = 0;
  double seconds = 0;  // since training started
};

struct TrainOptions {
  // Special tokens get the first ids, in this order; the list must hold <|endoftext|>.
  std::vector<std::string> special_tokens{kEndOfText};
  std::string pattern = kQwen2Pattern;
  // Called now and then from the training thread (after each batch of documents, every few hundred
  // merges, and once at the end).
  std::function<void(const TrainProgress&)> on_progress;
};

class Tokenizer {
 public:
  // A Hugging Face tokenizer.json with a byte-level BPE model; anything it cannot reproduce
  // exactly is rejected with an error naming the file and the field.
  static Tokenizer load(const std::string& path);
  // A tokenizer made of `spec` (e.g. one read from a GGUF file's metadata), checked as load()
  // checks a file's, errors naming spec.origin.
  static Tokenizer from_spec(TokenizerSpec spec);
  // Writes tokenizer.json (readable by HF `tokenizers`) atomically.
  void save(const std::string& path) const;
  // A checksum of what save() writes: equal for tokenizers that encode alike, whatever the file's
  // formatting; token shards record it (io/token_shard.h).
  uint64_t fingerprint() const;

  // Trains on the documents of `inputs` (files, folders, .jsonl: see io/documents.h). vocab_size
  // counts the 256 byte tokens, the merges and the special tokens; training stops early if no pair
  // is left to merge. The merges are those of HF's BpeTrainer (see docs/TOKENIZER.md).
  static Tokenizer train(const std::vector<std::string>& inputs, int vocab_size,
                         const TrainOptions& options = {});

  // What an added token written in the text becomes: its id (as in HF), or ordinary text, as
  // every other byte is (text from users, e.g. chat messages: a literal "<|im_end|>" in a message
  // must not end the turn). as_text is stricter than HF's split_special_tokens, which splits
  // special tokens only: no added token at all is matched.
  enum class AddedTokens { match, as_text };

  // Ids of `text`, any bytes at all (invalid UTF-8 included). Thread-safe.
  std::vector<uint32_t> encode(std::string_view text, AddedTokens added = AddedTokens::match) const;
  // Appends the ids of `text` to `ids`.
  void encode_append(std::string_view text, std::vector<uint32_t>& ids,
                     AddedTokens added = AddedTokens::match) const;
  // Ids of `text` where an added token is matched at bytes [begin, end) only if
  // may_match(begin, end): a chat template's own text, not what a message says
  // (infer/chat_format.h). Equal to encode(text) when may_match always holds.
  std::vector<uint32_t> encode_where(std::string_view text,
                                     const std::function<bool(size_t, size_t)>& may_match) const;
  // Ids of each text, encoded in parallel (OpenMP, static schedule: the result does not depend
  // on the thread count).
  std::vector<std::vector<uint32_t>> encode_batch(std::span<const std::string_view> texts) const;

  // The bytes the ids stand for, special tokens included; decode(encode(x)) == x for every x.
  // An id that is not in the vocabulary is an error.
  std::string decode(std::span<const uint32_t> ids) const;

  // One more than the largest id.
  int vocab_size() const;
  // The id of <|endoftext|>: separates documents and serves as BOS. An error if the file has none.
  uint32_t end_of_text_id() const;

  // The token of `id` as tokenizer.json writes it (byte-level string, or an added token's text).
  std::optional<std::string> id_to_token(uint32_t id) const;
  // The id of a token written as in tokenizer.json.
  std::optional<uint32_t> token_to_id(std::string_view token) const;
  // The merges in rank order, as tokenizer.json strings.
  const std::vector<std::pair<std::string, std::string>>& merges() const;
  // Where this tokenizer came from (its file, or "trained").
  const std::string& origin() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace gattn
