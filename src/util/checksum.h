// A fast 64-bit checksum of bytes (XXH3, Debian's libxxhash) for the integrity of files gattn
// writes: checkpoint tensors, token shards, and the tokenizer a shard was made with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gattn {

uint64_t checksum64(const void* data, size_t bytes);
std::string checksum_hex(uint64_t checksum);  // 16 lower-case hex digits

// checksum64 of the concatenation of every update(), without holding it in one buffer.
class StreamingChecksum {
 public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;
  void update(const void* data, size_t bytes);
  uint64_t value() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

}  // namespace gattn
