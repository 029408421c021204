#include "tokenizer/bpe_model.h"

#include <algorithm>

namespace gattn {

namespace {

struct Symbol {
  uint32_t id;
  int32_t prev, next;  // neighbours still alive, -1 at the ends
  uint32_t bytes;      // 0 once merged into its left neighbour
};

struct QueuedMerge {
  uint32_t rank, pos, result;
};

// Orders a max-heap so that its top is the lowest rank, then the leftmost position.
bool later(const QueuedMerge& a, const QueuedMerge& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<QueuedMerge> queue;
};

}  // namespace

BpeModel::BpeModel(const std::array<uint32_t, 256>& byte_ids, const std::vector<MergeRule>& merges,
                   bool ignore_merges, StringIdMap whole_words)
    : byte_ids_(byte_ids),
      merges_(merges.size()),
      ignore_merges_(ignore_merges),
      whole_words_(std::move(whole_words)) {
  for (size_t rank = 0; rank < merges.size(); ++rank)
    merges_[pack_pair(merges[rank].left, merges[rank].right)] =
        (uint64_t(rank) << 32) | merges[rank].result;
}

void BpeModel::encode_word(std::string_view word, std::vector<uint32_t>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    const auto it = whole_words_.find(word);
    if (it != whole_words_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local Scratch scratch;
  std::vector<Symbol>& symbols = scratch.symbols;
  std::vector<QueuedMerge>& queue = scratch.queue;
  const int32_t n = int32_t(word.size());
  symbols.resize(size_t(n));
  queue.clear();
  for (int32_t i = 0; i < n; ++i)
    symbols[i] = {byte_ids_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, 1};
  const auto enqueue = [&](int32_t pos, uint32_t left, uint32_t right) {
    if (const uint64_t* m = merges_.find(pack_pair(left, right)))
      queue.push_back({uint32_t(*m >> 32), uint32_t(pos), uint32_t(*m)});
  };
  for (int32_t i = 0; i + 1 < n; ++i) enqueue(i, symbols[i].id, symbols[i + 1].id);
  std::make_heap(queue.begin(), queue.end(), later);

  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    const QueuedMerge top = queue.back();
    queue.pop_back();
    Symbol& current = symbols[top.pos];
    if (current.bytes == 0 || current.next == -1) continue;
    const int32_t right_pos = current.next;
    const Symbol right = symbols[right_pos];
    // A stale entry: the pair at this position is no longer one that merges into `result`.
    const uint64_t* m = merges_.find(pack_pair(current.id, right.id));
    if (m == nullptr || uint32_t(*m) != top.result) continue;

    current.id = top.result;
    current.bytes += right.bytes;
    current.next = right.next;
    symbols[right_pos].bytes = 0;
    if (right.next != -1) symbols[right.next].prev = int32_t(top.pos);

    const auto push = [&](int32_t pos, uint32_t left, uint32_t right_id) {
      if (const uint64_t* found = merges_.find(pack_pair(left, right_id))) {
        queue.push_back({uint32_t(*found >> 32), uint32_t(pos), uint32_t(*found)});
        std::push_heap(queue.begin(), queue.end(), later);
      }
    };
    if (current.prev != -1) push(current.prev, symbols[current.prev].id, current.id);
    if (current.next != -1) push(int32_t(top.pos), current.id, symbols[current.next].id);
  }
  for (int32_t i = 0; i != -1; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace gattn
