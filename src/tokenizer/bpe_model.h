// The BPE step of encoding: a word's bytes start as byte tokens and merges apply lowest rank first,
// leftmost first among equal ranks, exactly as Hugging Face's Word::merge_all (a priority queue
// over a linked list of symbols, skipping queue entries that a merge made stale).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pair_map.h"

namespace gattn {

struct MergeRule {
  uint32_t left, right, result;
};

// Hashes std::string and std::string_view alike, so lookups by view allocate nothing.
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap =
    std::unordered_map<std::string, uint32_t, TransparentStringHash, std::equal_to<>>;

class BpeModel {
 public:
  BpeModel() = default;
  // merges in rank order; a pair listed twice keeps its later rank, as in HF.
  // whole_words maps raw bytes to ids, used only with ignore_merges.
  BpeModel(const std::array<uint32_t, 256>& byte_ids, const std::vector<MergeRule>& merges,
           bool ignore_merges, StringIdMap whole_words);

  // Appends the ids of one pre-tokenized piece (its raw bytes).
  void encode_word(std::string_view word, std::vector<uint32_t>& out) const;

 private:
  std::array<uint32_t, 256> byte_ids_{};
  PairTable<uint64_t> merges_;  // (left, right) -> rank << 32 | result
  bool ignore_merges_ = false;
  StringIdMap whole_words_;
};

}  // namespace gattn
