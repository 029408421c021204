// Token shards: the training data on disk, a stream of token ids with the start of each document.
//
// Layout (little-endian):
//   bytes  0..7   magic "GATTNTOK"
//          8..11  uint32 format version (2; version 1, without checksum, is refused)
//         12..15  uint32 bytes per token id: 2 (uint16) or 4 (uint32)
//         16..23  uint64 token count N
//         24..31  uint64 document count D
//         32..35  uint32 vocabulary size (every id is below it)
//         36..39  uint32 id of the document separator / BOS token (<|endoftext|>)
//         40..47  uint64 UTF-8 bytes of the documents' text
//         48..55  uint64 XXH3 checksum of everything after the header (version 2; zero in 1)
//         56..63  uint64 fingerprint of the tokenizer that made the ids (Tokenizer::fingerprint),
//                 0 when none did (synthetic data) or the version is 1
//         64..    N token ids, then D uint64 document starts (the position of each document's BOS)
// Each document is stored as BOS followed by its tokens. Opening checks every field against the
// file's size, so a truncated or foreign file is a clear error.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

struct ShardInfo {
  uint64_t tokens = 0;
  uint64_t documents = 0;
  uint32_t token_bytes = 0;
  uint32_t vocab_size = 0;
  uint32_t bos_id = 0;
  uint64_t text_bytes = 0;
  uint32_t version = 0;
  uint64_t tokenizer_fingerprint = 0;  // 0: unknown
};

// tokens: the concatenated documents (each starting with bos_id); document_starts: their offsets.
void write_token_shard(const std::string& path, const std::vector<uint32_t>& tokens,
                       const std::vector<uint64_t>& document_starts, uint32_t vocab_size,
                       uint32_t bos_id, uint64_t text_bytes, uint64_t tokenizer_fingerprint = 0);

// True if `head` (the first bytes of a file of `file_bytes`) has the shard magic, or a shard
// header's layout with damaged magic bytes (a known version and token width, and the size the
// header promises): such a file is a shard, never text.
bool looks_like_token_shard(std::string_view head, uint64_t file_bytes);

class TokenShard {
 public:
  explicit TokenShard(const std::string& path);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const std::string& path() const { return path_; }
  const ShardInfo& info() const { return info_; }
  uint32_t token(uint64_t i) const;
  // Copies tokens [begin, begin + count) into out.
  void read(uint64_t begin, uint64_t count, int32_t* out) const;
  uint64_t document_start(uint64_t d) const;

 private:
  std::string path_;
  ShardInfo info_;
  void* map_ = nullptr;
  size_t size_ = 0;
  const uint8_t* tokens_ = nullptr;
  const uint8_t* starts_ = nullptr;
};

}  // namespace gattn
