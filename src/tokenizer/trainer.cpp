#include "tokenizer/trainer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <queue>
#include <unordered_map>

#include "io/documents.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pair_map.h"
#include "util/error.h"

namespace gattn {

namespace {

using WordCounts =
    std::unordered_map<std::string, uint64_t, TransparentStringHash, std::equal_to<>>;
using Clock = std::chrono::steady_clock;

constexpr size_t kBatchBytes = size_t(64) << 20;  // documents held at once while counting

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Adds the pieces of `documents` to `total`, pre-tokenizing the documents in parallel.
void count_pieces(const std::vector<std::string>& documents, const PreTokenizer& pretokenizer,
                  WordCounts& total) {
  std::vector<WordCounts> per_thread(static_cast<size_t>(omp_get_max_threads()));
  std::exception_ptr error;
  const int64_t n = int64_t(documents.size());
#pragma omp parallel
  {
    WordCounts& mine = per_thread[size_t(omp_get_thread_num())];
#pragma omp for schedule(static, 1)
    for (int64_t i = 0; i < n; ++i) {
      try {
        pretokenizer.split(documents[size_t(i)], [&](std::string_view piece) {
          const auto it = mine.find(piece);
          if (it != mine.end()) {
            ++it->second;
          } else {
            mine.emplace(std::string(piece), 1);
          }
        });
      } catch (...) {
#pragma omp critical(gattn_trainer_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  for (WordCounts& counts : per_thread) {
    if (total.empty()) {
      total.swap(counts);
      continue;
    }
    for (auto& [piece, count] : counts) total[piece] += count;
  }
}

// The pieces as token-id sequences, stored back to back; merging only ever shortens a word.
struct Words {
  std::vector<uint32_t> symbols;
  std::vector<uint64_t> start;
  std::vector<uint32_t> length;
  std::vector<uint64_t> count;
};

// Most frequent first; among equal counts the smaller (left, right) pair, as HF's BpeTrainer.
struct Candidate {
  int64_t count;
  uint64_t pair;
  bool operator<(const Candidate& other) const {
    return count != other.count ? count < other.count : pair > other.pair;
  }
};

class MergeLoop {
 public:
  MergeLoop(Words words, std::vector<std::string> tokens, StringIdMap token_ids)
      : words_(std::move(words)), tokens_(std::move(tokens)), token_ids_(std::move(token_ids)) {
    for (size_t w = 0; w < words_.length.size(); ++w) {
      const uint32_t* s = &words_.symbols[words_.start[w]];
      for (uint32_t i = 0; i + 1 < words_.length[w]; ++i)
        add_pair(pack_pair(s[i], s[i + 1]), uint32_t(w), int64_t(words_.count[w]));
    }
    counts_.for_each([&](uint64_t pair, int64_t count) {
      if (count > 0) queue_.push({count, pair});
    });
    merged_in_step_.assign(words_.length.size(), UINT32_MAX);
  }

  // Makes the next merge; false when no pair is left.
  bool step(std::vector<MergeRule>& merges) {
    while (!queue_.empty()) {
      const Candidate top = queue_.top();
      queue_.pop();
      const int64_t* current = counts_.find(top.pair);
      const int64_t count = current ? *current : 0;
      if (count != top.count) {  // stale: the pair's count fell since it was queued
        if (count > 0) queue_.push({count, top.pair});
        continue;
      }
      if (count < 1) return false;
      merge(top.pair, merges);
      return true;
    }
    return false;
  }

  size_t token_count() const { return tokens_.size(); }
  std::vector<std::string> take_tokens() { return std::move(tokens_); }

 private:
  void add_pair(uint64_t pair, uint32_t word, int64_t count) {
    counts_[pair] += count;
    uint32_t& list = where_index_[pair];
    if (list == 0) {
      where_.emplace_back();
      list = uint32_t(where_.size());  // 1-based: 0 means no list yet
    }
    std::vector<uint32_t>& words = where_[list - 1];
    if (words.empty() || words.back() != word) words.push_back(word);
  }

  void merge(uint64_t pair, std::vector<MergeRule>& merges) {
    const uint32_t left = pair_left(pair), right = pair_right(pair);
    // A token that already exists (the same string made from another pair) keeps its id, as in HF.
    std::string merged = tokens_[left] + tokens_[right];
    const auto existing = token_ids_.find(merged);
    uint32_t result;
    if (existing != token_ids_.end()) {
      result = existing->second;
    } else {
      result = uint32_t(tokens_.size());
      token_ids_.emplace(merged, result);
      tokens_.push_back(std::move(merged));
    }
    merges.push_back({left, right, result});

    std::vector<uint32_t> affected;
    affected.swap(where_[*where_index_.find(pair) - 1]);
    touched_.clear();
    for (const uint32_t w : affected) {
      if (merged_in_step_[w] == step_) continue;
      merged_in_step_[w] = step_;
      uint32_t* s = &words_.symbols[words_.start[w]];
      const uint32_t n = words_.length[w];
      const int64_t count = int64_t(words_.count[w]);
      bool has_pair = false;
      for (uint32_t i = 0; i + 1 < n && !has_pair; ++i)
        has_pair = s[i] == left && s[i + 1] == right;
      if (!has_pair) continue;
      for (uint32_t i = 0; i + 1 < n; ++i) counts_[pack_pair(s[i], s[i + 1])] -= count;
      uint32_t out = 0;
      for (uint32_t i = 0; i < n;) {  // left to right, without overlaps, as HF's Word::merge
        if (i + 1 < n && s[i] == left && s[i + 1] == right) {
          s[out++] = result;
          i += 2;
        } else {
          s[out++] = s[i++];
        }
      }
      words_.length[w] = out;
      for (uint32_t i = 0; i + 1 < out; ++i) {
        const uint64_t p = pack_pair(s[i], s[i + 1]);
        if (s[i] == result || s[i + 1] == result) {
          add_pair(p, w, count);
          touched_.push_back(p);
        } else {
          counts_[p] += count;
        }
      }
    }
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    for (const uint64_t p : touched_)
      if (const int64_t c = *counts_.find(p); c > 0) queue_.push({c, p});
    ++step_;
  }

  Words words_;
  std::vector<std::string> tokens_;  // id -> token string (byte-level form)
  StringIdMap token_ids_;
  PairTable<int64_t> counts_;
  PairTable<uint32_t> where_index_;           // pair -> 1 + index into where_
  std::vector<std::vector<uint32_t>> where_;  // words that hold (or held) the pair
  std::priority_queue<Candidate> queue_;
  std::vector<uint32_t> merged_in_step_;
  std::vector<uint64_t> touched_;
  uint32_t step_ = 0;
};

}  // namespace

TokenizerSpec train_bpe(const std::vector<std::string>& inputs, int vocab_size,
                        const TrainOptions& options) {
  const auto start = Clock::now();
  TrainProgress progress;
  const auto report = [&](TrainProgress::Stage stage) {
    progress.stage = stage;
    progress.seconds = seconds_since(start);
    if (options.on_progress) options.on_progress(progress);
  };

  const std::vector<std::string>& specials = options.special_tokens;
  for (size_t i = 0; i < specials.size(); ++i) {
    if (specials[i].empty()) fail("tokenizer training: special token ", i, " is empty");
    if (std::find(specials.begin(), specials.begin() + long(i), specials[i]) !=
        specials.begin() + long(i))
      fail("tokenizer training: special token \"", specials[i], "\" is listed twice");
  }
  if (std::find(specials.begin(), specials.end(), kEndOfText) == specials.end())
    fail("tokenizer training: the special tokens must include ", kEndOfText);
  const int64_t base = int64_t(specials.size()) + 256;
  if (vocab_size < base)
    fail("tokenizer training: vocab_size ", vocab_size, " is too small: the 256 byte tokens and ",
         specials.size(), " special token(s) need ", base);

  const PreTokenizer pretokenizer({{options.pattern, "tokenizer training pattern", false}});
  WordCounts pieces;
  {
    std::vector<std::string> batch;
    size_t batch_bytes = 0;
    const auto flush = [&] {
      count_pieces(batch, pretokenizer, pieces);
      batch.clear();
      batch_bytes = 0;
      progress.unique_words = int64_t(pieces.size());
      report(TrainProgress::Stage::counting);
    };
    for_each_document(inputs, [&](std::string_view text, const std::string&) {
      batch.emplace_back(text);
      batch_bytes += text.size();
      ++progress.documents;
      progress.bytes += int64_t(text.size());
      if (batch_bytes >= kBatchBytes) flush();
    });
    flush();
  }

  // Ids as HF's BpeTrainer gives them: specials, then byte tokens sorted by their character.
  std::vector<std::string> tokens(specials.begin(), specials.end());
  StringIdMap token_ids;
  for (size_t i = 0; i < specials.size(); ++i) token_ids.emplace(specials[i], uint32_t(i));
  std::array<uint8_t, 256> bytes_by_char;
  for (int b = 0; b < 256; ++b) bytes_by_char[b] = uint8_t(b);
  std::sort(bytes_by_char.begin(), bytes_by_char.end(), [](uint8_t a, uint8_t b) {
    return byte_level::codepoint_of_byte(a) < byte_level::codepoint_of_byte(b);
  });
  std::array<uint32_t, 256> byte_id{};
  for (const uint8_t b : bytes_by_char) {
    std::string token = byte_level::token_string(std::string(1, char(b)));
    if (const auto it = token_ids.find(token); it != token_ids.end()) {  // a one-character special
      byte_id[b] = it->second;
      continue;
    }
    byte_id[b] = uint32_t(tokens.size());
    token_ids.emplace(token, byte_id[b]);
    tokens.push_back(std::move(token));
  }

  Words words;
  for (const auto& [piece, count] : pieces) {
    if (piece.size() < 2) continue;  // nothing to merge
    words.start.push_back(words.symbols.size());
    words.length.push_back(uint32_t(piece.size()));
    words.count.push_back(count);
    for (const char c : piece) words.symbols.push_back(byte_id[static_cast<uint8_t>(c)]);
  }
  WordCounts().swap(pieces);

  MergeLoop loop(std::move(words), std::move(tokens), std::move(token_ids));
  std::vector<MergeRule> merges;
  progress.merges_planned = vocab_size - base;
  auto last_report = Clock::now();
  while (int64_t(loop.token_count()) < vocab_size && loop.step(merges)) {
    progress.merges_done = int64_t(merges.size());
    if (seconds_since(last_report) >= 1.0) {
      report(TrainProgress::Stage::merging);
      last_report = Clock::now();
    }
  }
  progress.merges_done = int64_t(merges.size());

  TokenizerSpec spec;
  spec.origin = "trained tokenizer";
  std::vector<std::string> final_tokens = loop.take_tokens();
  spec.vocab.reserve(final_tokens.size());
  for (size_t id = 0; id < final_tokens.size(); ++id)
    spec.vocab.emplace_back(std::move(final_tokens[id]), uint32_t(id));
  for (const MergeRule& m : merges)
    spec.merges.emplace_back(spec.vocab[m.left].first, spec.vocab[m.right].first);
  for (size_t i = 0; i < specials.size(); ++i)
    spec.added_tokens.push_back({uint32_t(i), specials[i], true, false});
  spec.splits.push_back({options.pattern, "tokenizer training pattern", false});
  report(TrainProgress::Stage::done);
  return spec;
}

}  // namespace gattn
