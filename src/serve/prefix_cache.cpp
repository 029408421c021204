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

void PrefixCache::touch(Lru::iterator it) { lru_.splice(lru_.begin(), lru_, it); }

std::vector<const PrefixPiece*> PrefixCache::find(std::span<const uint32_t> tokens, int most) {
  const std::vector<uint64_t> h = prefix_hashes(tokens);
  for (auto end = ends_.rbegin(); end != ends_.rend(); ++end) {
    const int to = end->first;
    if (to > most || to > int(tokens.size())) continue;
    std::vector<Lru::iterator> chain;
    for (int at = to; at > 0;) {
      const auto it = by_key_.find(h[at]);
      if (it == by_key_.end()) break;
      const PrefixPiece& p = *it->second;
      if (p.to != at || !std::equal(p.tokens.begin(), p.tokens.end(), tokens.begin() + p.from))
        break;
      chain.push_back(it->second);
      at = p.from;
      if (at == 0) {
        std::reverse(chain.begin(), chain.end());
        std::vector<const PrefixPiece*> out;
        for (Lru::iterator piece : chain) {
          touch(piece);
          out.push_back(&*piece);
        }
        ++stats_.hits;
        stats_.tokens_reused += to;
        return out;
      }
    }
  }
  ++stats_.misses;
  return {};
}

bool PrefixCache::contains(std::span<const uint32_t> tokens, int to) const {
  return by_key_.contains(prefix_hashes(tokens.first(size_t(to))).back());
}

void PrefixCache::insert(std::span<const uint32_t> tokens, int from, int to,
                         std::vector<float> memory) {
  if (!(0 <= from && from < to && to <= int(tokens.size()))) return;
  const std::vector<uint64_t> h = prefix_hashes(tokens.first(size_t(to)));
  if (const auto it = by_key_.find(h[to]); it != by_key_.end()) return touch(it->second);
  PrefixPiece piece{.key = h[to],
                    .parent = h[from],
                    .from = from,
                    .to = to,
                    .tokens = {tokens.begin() + from, tokens.begin() + to},
                    .memory = std::move(memory)};
  if (piece.bytes() > max_bytes_) return;
  stats_.bytes += piece.bytes();
  ++stats_.pieces;
  ++ends_[to];
  lru_.push_front(std::move(piece));
  by_key_[h[to]] = lru_.begin();
  while (stats_.bytes > max_bytes_) {
    const PrefixPiece& old = lru_.back();
    stats_.bytes -= old.bytes();
    --stats_.pieces;
    ++stats_.evicted;
    if (--ends_[old.to] == 0) ends_.erase(old.to);
    by_key_.erase(old.key);
    lru_.pop_back();
  }
}

}  // namespace gattn
