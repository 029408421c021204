#include "train/prepare_data.h"

#include <chrono>

#include "io/documents.h"
#include "io/token_shard.h"
#include "util/checksum.h"
#include "util/error.h"

namespace gattn {

ShardStats write_shard_from_text(const std::vector<std::string>& inputs, const Tokenizer& tokenizer,
                                 const std::string& out) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> texts;
  for_each_document(inputs,
                    [&](std::string_view text, const std::string&) { texts.emplace_back(text); });
  if (texts.empty()) fail("no documents in the inputs");
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  const std::vector<std::vector<uint32_t>> encoded = tokenizer.encode_batch(views);
  const uint32_t bos = tokenizer.end_of_text_id();
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> starts;
  ShardStats stats;
  for (size_t d = 0; d < texts.size(); ++d) {
    starts.push_back(tokens.size());
    tokens.push_back(bos);
    tokens.insert(tokens.end(), encoded[d].begin(), encoded[d].end());
    stats.text_bytes += int64_t(texts[d].size());
  }
  write_token_shard(out, tokens, starts, uint32_t(tokenizer.vocab_size()), bos,
                    uint64_t(stats.text_bytes), tokenizer.fingerprint());
  stats.documents = int64_t(texts.size());
  stats.tokens = int64_t(tokens.size());
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

void require_shard_tokenizer(const TokenShard& shard, const Tokenizer& tokenizer,
                             const std::string& tokenizer_path) {
  const uint64_t recorded = shard.info().tokenizer_fingerprint;
  if (recorded != 0 && recorded != tokenizer.fingerprint())
    fail(shard.path(), ": was made with another tokenizer than ", tokenizer_path, " (fingerprints ",
         checksum_hex(recorded), " and ", checksum_hex(tokenizer.fingerprint()),
         "); bits per byte need the tokenizer that made the ids");
}

std::vector<uint32_t> token_byte_lengths(const Tokenizer& tokenizer) {
  std::vector<uint32_t> lengths(tokenizer.vocab_size(), 0);
  for (uint32_t id = 0; id < lengths.size(); ++id) {
    const std::optional<std::string> token = tokenizer.id_to_token(id);
    if (!token || tokenizer.token_to_id(*token) != id) continue;  // a hole in the id range
    if (id == tokenizer.end_of_text_id()) continue;
    lengths[id] = uint32_t(tokenizer.decode({&id, 1}).size());
  }
  return lengths;
}

}  // namespace gattn
