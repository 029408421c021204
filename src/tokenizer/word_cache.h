// A per-thread memo of piece -> ids: natural text repeats its words, and a hit skips the merges.
// Each thread has its own (no locks); it belongs to one tokenizer at a time (identified by a
// serial number) and is emptied when another tokenizer uses the thread, or when it is full.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

class WordCache {
 public:
  static WordCache& for_this_thread(uint64_t tokenizer_serial);

  // Appends the cached ids of `word` to `out` and returns true, or returns false.
  bool append_ids(std::string_view word, uint64_t hash, std::vector<uint32_t>& out) const;
  void insert(std::string_view word, uint64_t hash, const uint32_t* ids, size_t count);

  static constexpr size_t kMaxWordBytes = 256;  // longer pieces are rare and not worth keeping

 private:
  static constexpr size_t kSlots = size_t(1) << 16;
  static constexpr size_t kMaxEntries = kSlots / 2;
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0, ids_offset = 0;
    uint16_t key_bytes = 0, id_count = 0;  // key_bytes 0: empty
  };
  void clear();
  size_t slot_of(std::string_view word, uint64_t hash) const;

  uint64_t owner_ = 0;
  size_t entries_ = 0;
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<uint32_t> ids_;
};

}  // namespace gattn
