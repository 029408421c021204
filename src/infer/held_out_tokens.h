// Held-out tokens for evaluation and analysis: a token shard as it is, or text tokenized into a
// temporary shard.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/token_shard.h"

namespace gattn {

// A token shard by its content: a file that looks like one is opened as one (so bad magic bytes,
// a bad version or size is an error naming it), anything else is text.
bool is_token_shard_file(const std::string& path);

// A shard, or text files / folders / .jsonl tokenized into a temporary shard (removed with this
// object). token_bytes (UTF-8 bytes per token id) is filled when a tokenizer is given.
class HeldOutTokens {
 public:
  HeldOutTokens(const std::vector<std::string>& data, const std::string& tokenizer, int vocab_size);
  ~HeldOutTokens();
  HeldOutTokens(const HeldOutTokens&) = delete;
  HeldOutTokens& operator=(const HeldOutTokens&) = delete;
  const TokenShard& shard() const { return *shard_; }
  const std::vector<uint32_t>* token_bytes() const {
    return token_bytes_.empty() ? nullptr : &token_bytes_;
  }

 private:
  std::string temporary_;
  std::unique_ptr<TokenShard> shard_;
  std::vector<uint32_t> token_bytes_;
};

}  // namespace gattn
