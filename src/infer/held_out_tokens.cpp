#include "infer/held_out_tokens.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>

#include "infer/model_files.h"
#include "train/prepare_data.h"
#include "util/error.h"

namespace gattn {

namespace fs = std::filesystem;

bool is_token_shard_file(const std::string& path) {
  if (fs::is_directory(path)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head);
  return looks_like_token_shard(std::string_view(head, size_t(in.gcount())), fs::file_size(path));
}

HeldOutTokens::HeldOutTokens(const std::vector<std::string>& data, const std::string& tokenizer,
                             int vocab_size) {
  for (const std::string& path : data)
    if (!fs::exists(path)) fail(path, ": no such file or folder");
  std::string shard_path = data.size() == 1 && is_token_shard_file(data[0]) ? data[0] : "";
  std::optional<Tokenizer> t;
  if (!tokenizer.empty()) {
    t = load_tokenizer_file(tokenizer);
    token_bytes_ = token_byte_lengths(*t);
  }
  if (shard_path.empty()) {
    if (!t) fail("--tokenizer is needed to read text (", data[0], " is not a token shard)");
    static std::atomic<int> made{0};  // one process may read several at once (Python threads)
    temporary_ = (fs::temp_directory_path() / ("gattn_text_" + std::to_string(::getpid()) + "_" +
                                               std::to_string(made++) + ".bin"))
                     .string();
    write_shard_from_text(data, *t, temporary_);
    shard_path = temporary_;
  }
  shard_ = std::make_unique<TokenShard>(shard_path);
  if (t) require_shard_tokenizer(*shard_, *t, tokenizer);
  // For text, name the tokenizer whose ids these are, not the temporary shard.
  if (int64_t(shard_->info().vocab_size) > vocab_size)
    fail(temporary_.empty() ? shard_path : tokenizer, ": tokens go up to ",
         shard_->info().vocab_size, " but the model's vocab_size is ", vocab_size);
}

HeldOutTokens::~HeldOutTokens() {
  shard_.reset();
  if (!temporary_.empty()) fs::remove(temporary_);
}

}  // namespace gattn
