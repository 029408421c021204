// The server's prompt-prefix cache: pieces of a sequence's decode memory (the keys and values of
// a block of positions, and the recurrent states at its end: model/block.h DecodeMemory::save)
// keyed by the tokens before their end. A piece covers positions [from, to) and hangs below its
// parent, the piece ending at `from`; a prompt walks down from the root along the pieces its
// tokens match. The server saves a piece at every point of the prefill grid (every 256 tokens)
// and at the end of each finished request, so a prompt sharing a prefix with an earlier one, or
// continuing its conversation, starts from there. Keys and values can be cut at any position, so
// a model without recurrent layers also uses the matching start of a piece; a hybrid's recurrent
// state holds only at a piece's end. Least recently used pieces go first over the memory bound.
// Used on the scheduler's thread only. Keys are 64-bit hashes of the whole prefix; every piece on
// the way is checked token by token.
#pragma once
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace gattn {

struct PrefixPiece {
  uint64_t key = 0, parent = 0;  // prefix hashes of tokens [0, to) and [0, from)
  int from = 0, to = 0;
  std::vector<uint32_t> tokens;  // [from, to)
  std::vector<float> memory;     // BatchedInferState::save(slot, from) at length `to`
  int64_t bytes() const { return int64_t(tokens.size() + memory.size()) * 4 + 96; }
};

struct PrefixMatch {
  std::vector<const PrefixPiece*> chain;  // root first
  int length = 0;  // tokens reused: the last piece's end, or a position inside it
};

struct PrefixCacheStats {
  int64_t hits = 0, misses = 0, tokens_reused = 0, bytes = 0, pieces = 0, evicted = 0;
};

class PrefixCache {
 public:
  explicit PrefixCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // The longest cached prefix of `tokens`, at most `most` tokens long; `cuttable`: the last
  // piece may be used up to any position (no recurrent state). Counts a hit or a miss.
  PrefixMatch find(std::span<const uint32_t> tokens, int most, bool cuttable);
  // Whether the piece ending after tokens [0, to) is here (no need to save it again).
  bool contains(std::span<const uint32_t> tokens, int to) const;
  // Keeps the piece of tokens [from, to) (its memory from BatchedInferState::save), then evicts
  // the least recently used pieces over the bound. A piece larger than the bound is not kept.
  void insert(std::span<const uint32_t> tokens, int from, int to, std::vector<float> memory);
  const PrefixCacheStats& stats() const { return stats_; }

 private:
  using Lru = std::list<PrefixPiece>;
  void evict_one();
  const int64_t max_bytes_;
  Lru lru_;  // most recently used first
  std::unordered_map<uint64_t, Lru::iterator> by_key_;
  std::unordered_multimap<uint64_t, Lru::iterator> children_;  // by parent key
  PrefixCacheStats stats_;
};

// The hash of tokens [0, n) (FNV-1a over the ids, 64 bits) for every n in [0, tokens.size()].
std::vector<uint64_t> prefix_hashes(std::span<const uint32_t> tokens);

}  // namespace gattn
