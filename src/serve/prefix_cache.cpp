#include "serve/prefix_cache.h"

#include <algorithm>

namespace gattn {

std::vector<uint64_t> prefix_hashes(std::span<const uint32_t> tokens) {
  std::vector<uint64_t> h(tokens.size() + 1);
  h[0] = 14695981039346656037ull;
  for (size_t i = 0; i < tokens.size(); ++i) {
    uint64_t x = h[i];
    for (int byte = 0; byte < 4; ++byte) {
      x ^= (tokens[i] >> (8 * byte)) & 0xff;
      x *= 1099511628211ull;
    }
    h[i + 1] = x;
  }
  return h;
}

PrefixMatch PrefixCache::find(std::span<const uint32_t> tokens, int most, bool cuttable) {
  const std::span<const uint32_t> usable =
      tokens.first(size_t(std::clamp<int64_t>(most, 0, int64_t(tokens.size()))));
  PrefixMatch match;
  uint64_t key = prefix_hashes({}).front();
  std::vector<Lru::iterator> used;
  while (true) {
    // The child of the prefix so far whose tokens match the prompt's next ones the longest.
    Lru::iterator best;
    size_t best_n = 0;
    const auto [first, last] = children_.equal_range(key);
    for (auto it = first; it != last; ++it) {
      const PrefixPiece& p = *it->second;
      if (p.from != match.length) continue;
      const auto rest = usable.subspan(size_t(match.length));
      const size_t n =
          size_t(std::mismatch(p.tokens.begin(), p.tokens.end(), rest.begin(), rest.end()).first -
                 p.tokens.begin());
      if (n > best_n) best_n = n, best = it->second;
    }
    if (best_n == 0) break;
    const bool whole = best_n == best->tokens.size();
    if (!whole && !cuttable) break;
    used.push_back(best);
    match.chain.push_back(&*best);
    match.length += int(best_n);
    if (!whole) break;
    key = best->key;
  }
  for (Lru::iterator it : used) lru_.splice(lru_.begin(), lru_, it);
  if (match.length > 0) {
    ++stats_.hits;
    stats_.tokens_reused += match.length;
  } else {
    ++stats_.misses;
  }
  return match;
}

bool PrefixCache::contains(std::span<const uint32_t> tokens, int to) const {
  return by_key_.contains(prefix_hashes(tokens.first(size_t(to))).back());
}

void PrefixCache::insert(std::span<const uint32_t> tokens, int from, int to,
                         std::vector<float> memory) {
  if (!(0 <= from && from < to && to <= int(tokens.size()))) return;
  const std::vector<uint64_t> h = prefix_hashes(tokens.first(size_t(to)));
  if (const auto it = by_key_.find(h[to]); it != by_key_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  PrefixPiece piece{.key = h[to],
                    .parent = h[from],
                    .from = from,
                    .to = to,
                    .tokens = {tokens.begin() + from, tokens.begin() + to},
                    .memory = std::move(memory)};
  if (piece.bytes() > max_bytes_) return;
  stats_.bytes += piece.bytes();
  ++stats_.pieces;
  lru_.push_front(std::move(piece));
  by_key_[h[to]] = lru_.begin();
  children_.emplace(h[from], lru_.begin());
  while (stats_.bytes > max_bytes_) evict_one();
}

void PrefixCache::evict_one() {
  const auto last = std::prev(lru_.end());
  stats_.bytes -= last->bytes();
  --stats_.pieces;
  ++stats_.evicted;
  by_key_.erase(last->key);
  const auto [first, end] = children_.equal_range(last->parent);
  for (auto it = first; it != end; ++it)
    if (it->second == last) {
      children_.erase(it);
      break;
    }
  lru_.pop_back();
}

}  // namespace gattn
