// The server's prompt-prefix cache: pieces of a sequence's decode memory (the keys and values of
// a block of positions, and the recurrent states at its end: model/block.h DecodeMemory::save)
// keyed by the tokens before their end. A piece covers positions [from, to) and names its parent,
// the piece ending at `from`; a prefix is reused when its whole chain is here. The server saves a
// piece at every point of the prefill grid (every 256 tokens) and at the end of each finished
// request, so a prompt sharing a prefix with an earlier one, or continuing its conversation,
// starts from there. Least recently used pieces go first once the memory bound is reached.
// Used on the scheduler's thread only.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

namespace gattn {

struct PrefixPiece {
  uint64_t key = 0, parent = 0;  // prefix hashes of tokens [0, to) and [0, from)
  int from = 0, to = 0;
  std::vector<uint32_t> tokens;  // [from, to): a hit is checked token by token
  std::vector<float> memory;     // BatchedInferState::save(slot, from) at length `to`
  int64_t bytes() const { return int64_t(tokens.size() + memory.size()) * 4 + 64; }
};

struct PrefixCacheStats {
  int64_t hits = 0, misses = 0, tokens_reused = 0, bytes = 0, pieces = 0, evicted = 0;
};

class PrefixCache {
 public:
  explicit PrefixCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // The chain (root first) of the longest cached prefix of `tokens` no longer than `most`
  // tokens; empty when none. Counts a hit or a miss.
  std::vector<const PrefixPiece*> find(std::span<const uint32_t> tokens, int most);
  // Whether the piece ending after tokens [0, to) is here (no need to save it again).
  bool contains(std::span<const uint32_t> tokens, int to) const;
  // Keeps the piece of tokens [from, to) (its memory from BatchedInferState::save), then evicts
  // the least recently used pieces over the bound. A piece larger than the bound is not kept.
  void insert(std::span<const uint32_t> tokens, int from, int to, std::vector<float> memory);
  const PrefixCacheStats& stats() const { return stats_; }

 private:
  using Lru = std::list<PrefixPiece>;
  void touch(Lru::iterator it);
  const int64_t max_bytes_;
  Lru lru_;  // most recently used first
  std::unordered_map<uint64_t, Lru::iterator> by_key_;
  std::map<int, int> ends_;  // the pieces' `to` values and how many end there
  PrefixCacheStats stats_;
};

// The hash of tokens [0, n) (FNV-1a over the ids, 64 bits) for every n in [0, tokens.size()].
std::vector<uint64_t> prefix_hashes(std::span<const uint32_t> tokens);

}  // namespace gattn
