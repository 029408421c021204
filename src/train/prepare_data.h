// Text to token shards: documents (io/documents.h) encoded with a tokenizer, each preceded by
// <|endoftext|> (the document separator and BOS), written as one shard (io/token_shard.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/token_shard.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

struct ShardStats {
  int64_t documents = 0;
  int64_t tokens = 0;  // BOS included
  int64_t text_bytes = 0;
  double seconds = 0;
};

ShardStats write_shard_from_text(const std::vector<std::string>& inputs, const Tokenizer& tokenizer,
                                 const std::string& out);

// Bits per byte need the tokenizer that made the shard: fails naming both when the shard records
// another tokenizer; a shard written without a tokenizer (fingerprint 0) records none.
void require_shard_tokenizer(const TokenShard& shard, const Tokenizer& tokenizer,
                             const std::string& tokenizer_path);

// UTF-8 bytes each token id decodes to, for bits per byte; special tokens count 0.
std::vector<uint32_t> token_byte_lengths(const Tokenizer& tokenizer);

}  // namespace gattn
