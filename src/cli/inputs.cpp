#include "cli/inputs.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "train/prepare_data.h"
#include "train/train_checkpoint.h"
#include "util/error.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;

bool is_shard(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::string(magic, 8) == "GATTNTOK";
}
}  // namespace

std::unique_ptr<Weights> load_checkpoint_model(const std::string& path, std::string& folder) {
  folder = fs::exists(fs::path(path) / "checkpoints") ? latest_checkpoint(path) : path;
  if (folder.empty()) fail(path, ": the run has no checkpoint");
  return load_model(folder);
}

std::unique_ptr<Weights> with_context(std::unique_ptr<Weights> weights, int positions,
                                      const std::string& rope_scaling_json) {
  Config c = weights->config();
  if (positions <= c.max_position_embeddings && rope_scaling_json.empty()) return weights;
  c.max_position_embeddings = std::max(c.max_position_embeddings, positions);
  if (!rope_scaling_json.empty()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(rope_scaling_json);
    } catch (const nlohmann::json::exception& e) {
      fail("--rope-scaling: not valid JSON (", e.what(), ")");
    }
    c.rope_scaling = rope_scaling_from_json(j, "--rope-scaling");
  }
  return std::make_unique<Weights>(c, std::move(*weights).release());
}

HeldOutTokens::HeldOutTokens(const std::vector<std::string>& data, const std::string& tokenizer,
                             int vocab_size) {
  std::string shard_path = data.size() == 1 && is_shard(data[0]) ? data[0] : "";
  if (!tokenizer.empty() || shard_path.empty()) {
    if (tokenizer.empty()) fail("--tokenizer is needed to read text");
    const Tokenizer t = Tokenizer::load(tokenizer);
    token_bytes_ = token_byte_lengths(t);
    if (shard_path.empty()) {
      temporary_ =
          (fs::temp_directory_path() / ("gattn_text_" + std::to_string(::getpid()) + ".bin"))
              .string();
      write_shard_from_text(data, t, temporary_);
      shard_path = temporary_;
    }
  }
  shard_ = std::make_unique<TokenShard>(shard_path);
  if (int64_t(shard_->info().vocab_size) > vocab_size)
    fail(shard_path, ": tokens go up to ", shard_->info().vocab_size,
         " but the model's vocab_size is ", vocab_size);
}

HeldOutTokens::~HeldOutTokens() {
  shard_.reset();
  if (!temporary_.empty()) fs::remove(temporary_);
}

}  // namespace gattn
