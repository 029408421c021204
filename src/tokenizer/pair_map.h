// An open-addressing hash table keyed by a token pair (packed into 64 bits): the merge table is
// probed for every adjacent pair of every new word, and the trainer updates pair counts millions of
// times, so it must be cheaper than std::unordered_map's nodes.
#pragma once
#include <cstdint>
#include <vector>

namespace gattn {

inline uint64_t pack_pair(uint32_t left, uint32_t right) { return (uint64_t(left) << 32) | right; }
inline uint32_t pair_left(uint64_t pair) { return uint32_t(pair >> 32); }
inline uint32_t pair_right(uint64_t pair) { return uint32_t(pair); }

template <typename Value>
class PairTable {
 public:
  explicit PairTable(size_t expected = 0) { rehash(capacity_for(expected)); }

  // The value for `pair`, default-constructed if it was absent.
  Value& operator[](uint64_t pair) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    Slot& s = slots_[find_slot(pair)];
    if (s.key == kEmpty) {
      s.key = pair;
      s.value = Value{};
      ++size_;
    }
    return s.value;
  }

  // The value for `pair`, or nullptr.
  const Value* find(uint64_t pair) const {
    const Slot& s = slots_[find_slot(pair)];
    return s.key == kEmpty ? nullptr : &s.value;
  }
  Value* find(uint64_t pair) {
    Slot& s = slots_[find_slot(pair)];
    return s.key == kEmpty ? nullptr : &s.value;
  }

  size_t size() const { return size_; }

  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const Slot& s : slots_)
      if (s.key != kEmpty) visit(s.key, s.value);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);  // pair (2^32-1, 2^32-1): never a real pair
  struct Slot {
    uint64_t key = kEmpty;
    Value value{};
  };

  static size_t capacity_for(size_t expected) {
    size_t capacity = 16;
    while (capacity < expected * 2 + 2) capacity *= 2;
    return capacity;
  }

  size_t find_slot(uint64_t pair) const {
    const size_t mask = slots_.size() - 1;
    size_t i = size_t((pair * 0x9E3779B97F4A7C15ull) >> shift_);  // Fibonacci hashing: top bits
    while (slots_[i].key != kEmpty && slots_[i].key != pair) i = (i + 1) & mask;
    return i;
  }

  void rehash(size_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(capacity, Slot{});
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (Slot& s : old)
      if (s.key != kEmpty) {
        Slot& fresh = slots_[find_slot(s.key)];
        fresh.key = s.key;
        fresh.value = std::move(s.value);
        ++size_;
      }
  }

  std::vector<Slot> slots_;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace gattn
