#include "tokenizer/word_cache.h"

#include <algorithm>

namespace gattn {

WordCache& WordCache::for_this_thread(uint64_t tokenizer_serial) {
  thread_local WordCache cache;
  if (cache.owner_ != tokenizer_serial) {
    cache.clear();
    cache.owner_ = tokenizer_serial;
  }
  return cache;
}

void WordCache::clear() {
  slots_.assign(kSlots, Slot{});
  keys_.clear();
  ids_.clear();
  entries_ = 0;
}

size_t WordCache::slot_of(std::string_view word, uint64_t hash) const {
  size_t i = size_t(hash) & (kSlots - 1);
  while (true) {
    const Slot& s = slots_[i];
    if (s.key_bytes == 0) return i;
    if (s.hash == hash && s.key_bytes == word.size() &&
        std::string_view(keys_).substr(s.key_offset, s.key_bytes) == word)
      return i;
    i = (i + 1) & (kSlots - 1);
  }
}

bool WordCache::append_ids(std::string_view word, uint64_t hash, std::vector<uint32_t>& out) const {
  const Slot& s = slots_[slot_of(word, hash)];
  if (s.key_bytes == 0) return false;
  out.insert(out.end(), ids_.begin() + s.ids_offset, ids_.begin() + s.ids_offset + s.id_count);
  return true;
}

void WordCache::insert(std::string_view word, uint64_t hash, const uint32_t* ids, size_t count) {
  if (word.empty() || word.size() > kMaxWordBytes) return;
  if (entries_ >= kMaxEntries || keys_.size() > (size_t(1) << 30)) clear();
  Slot& s = slots_[slot_of(word, hash)];
  if (s.key_bytes != 0) return;
  s = {hash, uint32_t(keys_.size()), uint32_t(ids_.size()), uint16_t(word.size()), uint16_t(count)};
  keys_.append(word);
  ids_.insert(ids_.end(), ids, ids + count);
  ++entries_;
}

}  // namespace gattn
