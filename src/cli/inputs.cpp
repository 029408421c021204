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
#include "util/json_parse.h"

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

std::unique_ptr<Model> load_checkpoint_model(const std::string& path, std::string& folder) {
  folder = fs::exists(fs::path(path) / "checkpoints") ? latest_checkpoint(path) : path;
  if (folder.empty()) fail(path, ": the run has no checkpoint");
  std::vector<float> params;
  auto model = std::make_unique<Model>(load_model(folder, params));
  model->params() = params;
  return model;
}

std::unique_ptr<Model> with_context(std::unique_ptr<Model> model, int positions,
                                    const std::string& rope_scaling_json) {
  Config c = model->config();
  if (positions <= c.max_position_embeddings && rope_scaling_json.empty()) return model;
  c.max_position_embeddings = std::max(c.max_position_embeddings, positions);
  if (!rope_scaling_json.empty()) {
    c.rope_scaling = rope_scaling_from_json(parse_json_text(rope_scaling_json, "--rope-scaling"),
                                            "--rope-scaling");
  }
  auto extended = std::make_unique<Model>(c);
  extended->params() = std::move(model->params());
  return extended;
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
