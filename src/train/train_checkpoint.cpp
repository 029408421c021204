#include "train/train_checkpoint.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>

#include "io/checkpoint.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "io/staged_folder.h"
#include "util/checksum.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;

constexpr const char* kPrefix = "step_";

std::string step_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%s%08lld", kPrefix, static_cast<long long>(step));
  return name;
}

// Complete checkpoint folders of a run, oldest first.
std::vector<fs::path> checkpoints(const fs::path& folder) {
  std::vector<fs::path> found;
  if (!fs::is_directory(folder)) return found;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind(kPrefix, 0) == 0 &&
        name.find_first_not_of("0123456789", 5) == std::string::npos)
      found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// A non-negative integer field of state.json, within [0, hi].
int64_t state_integer(const nlohmann::json& state, const char* name, int64_t hi,
                      const std::string& where) {
  if (!state.contains(name) || !state[name].is_number_integer())
    fail(where, ": field '", name, "': expected an integer, found ",
         state.contains(name) ? json_summary(state[name]) : "nothing");
  if (state[name].is_number_unsigned() && state[name].get<uint64_t>() > uint64_t(INT64_MAX))
    fail(where, ": field '", name, "': ", state[name].get<uint64_t>(), " is out of range");
  const int64_t value = state[name].get<int64_t>();
  if (value < 0 || value > hi)
    fail(where, ": field '", name, "': ", value, " is outside [0, ", hi, "]");
  return value;
}

// An integer written as decimal digits only, in [0, hi]; an Error naming `where` otherwise.
int64_t strict_integer(const std::string& text, int64_t hi, const std::string& where) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    fail(where, ": '", text, "' is not an integer in [0, ", hi, "]");
  const int64_t value = std::stoll(text);
  if (value > hi) fail(where, ": ", value, " is outside [0, ", hi, "]");
  return value;
}

// The folder name's step: step_NNNNNNNN.
int64_t folder_step(const std::string& folder) {
  const std::string name = fs::path(folder).filename().string();
  return strict_integer(name.substr(std::string(kPrefix).size()), INT64_MAX, folder);
}

}  // namespace

std::string training_state_checksum(nlohmann::json state) {
  state.erase("xxh3");
  const std::string text = state.dump();
  return checksum_hex(checksum64(text.data(), text.size()));
}

TrainingProgress parse_training_state(const nlohmann::json& state, const std::string& where,
                                      int64_t expected_step, int64_t max_step) {
  if (!state.is_object()) fail(where, ": expected a JSON object");
  for (const auto& [key, value] : state.items())
    if (key != "step" && key != "tokens_seen" && key != "skipped_steps" && key != "run_config" &&
        key != "xxh3")
      fail(where, ": unknown field '", key, "'");
  if (!state.contains("xxh3") || !state["xxh3"].is_string())
    fail(where, ": has no checksum (field 'xxh3'); it was not written by this gattn or was edited");
  if (state["xxh3"].get<std::string>() != training_state_checksum(state))
    fail(where, ": is corrupt: its fields have checksum ", training_state_checksum(state),
         " but it records ", state["xxh3"].get<std::string>());
  TrainingProgress p;
  p.step = state_integer(state, "step", INT64_MAX, where);
  if (p.step != expected_step)
    fail(where, ": field 'step' is ", p.step, " but the folder is the checkpoint of step ",
         expected_step);
  if (p.step > max_step)
    fail(where, ": field 'step' is ", p.step, ", beyond the run's ", max_step, " steps");
  p.tokens_seen = state_integer(state, "tokens_seen", INT64_MAX, where);
  p.skipped_steps = state_integer(state, "skipped_steps", p.step, where);
  if (!state.contains("run_config") || !state["run_config"].is_object())
    fail(where, ": field 'run_config': expected an object");
  return p;
}

nlohmann::json training_state_json(const TrainingProgress& progress,
                                   const nlohmann::json& run_config) {
  nlohmann::json record = {{"step", progress.step},
                           {"tokens_seen", progress.tokens_seen},
                           {"skipped_steps", progress.skipped_steps},
                           {"run_config", run_config}};
  record["xxh3"] = training_state_checksum(record);
  return record;
}

OptimizerMoments moments_of(const AdamW& optimizer) {
  if (optimizer.sharded()) fail("moments_of: the optimizer holds a shard; gather the moments");
  return {optimizer.first_moment().data(), optimizer.second_moment().data(), optimizer.steps()};
}

std::string save_training_checkpoint(const std::string& run_dir, const Weights& weights,
                                     const OptimizerMoments& optimizer,
                                     const TrainingProgress& state,
                                     const nlohmann::json& run_config, int keep) {
  const fs::path folder = fs::path(run_dir) / "checkpoints";
  const fs::path final_path = folder / step_name(state.step);
  StagedFolder staged(final_path.string(), ExistingFolder::replace, "checkpoint");
  write_model_files(staged.path(), weights);
  kill_point("checkpoint_halfway");
  std::vector<TensorToWrite> moments;
  for (const TensorSpec& t : weights.layout().tensors()) {
    moments.push_back({"exp_avg." + t.name, Dtype::F32, t.shape, optimizer.first + t.offset});
    moments.push_back({"exp_avg_sq." + t.name, Dtype::F32, t.shape, optimizer.second + t.offset});
  }
  write_safetensors(staged.file("optimizer.safetensors"), moments,
                    {{"adamw_steps", std::to_string(optimizer.steps)}});
  write_text_file_atomically(staged.file("state.json"),
                             training_state_json(state, run_config).dump(2) + "\n");
  staged.publish();
  const std::vector<fs::path> all = checkpoints(folder);
  for (size_t i = 0; i + size_t(keep) < all.size(); ++i) fs::remove_all(all[i]);
  for (const auto& entry : fs::directory_iterator(folder))  // left by a crash mid-write
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      fs::remove_all(entry.path());
  return final_path.string();
}

std::string latest_checkpoint(const std::string& run_dir) {
  const std::vector<fs::path> all = checkpoints(fs::path(run_dir) / "checkpoints");
  return all.empty() ? "" : all.back().string();
}

ResumePoint load_training_checkpoint(const std::string& folder, Weights& weights, AdamW& optimizer,
                                     int64_t max_step) {
  const std::string state_path = folder + "/state.json";
  const nlohmann::json state = parse_json_file(state_path);
  const ResumePoint point{parse_training_state(state, state_path, folder_step(folder), max_step),
                          state["run_config"]};
  const Config saved = load_config(folder + "/config.json");
  if (config_to_json(saved) != config_to_json(weights.config()))
    fail(folder, ": checkpoint's model config differs from the run's (checkpoint: ",
         config_to_json(saved).dump(), "; run: ", config_to_json(weights.config()).dump(), ")");
  load_params(folder + "/model.safetensors", weights.layout(), weights.data());

  const SafetensorsReader moments(folder + "/optimizer.safetensors", Checksums::required);
  const ShardRange shard = optimizer.shard();
  for (const TensorSpec& t : weights.layout().tensors()) {
    const int64_t begin = std::max(t.offset, shard.begin);
    const int64_t end = std::min(t.offset + t.numel, shard.end);
    for (auto [prefix, target] : {std::pair{"exp_avg.", &optimizer.first_moment()},
                                  std::pair{"exp_avg_sq.", &optimizer.second_moment()}}) {
      const std::string name = prefix + t.name;
      if (moments.get(name).shape != t.shape)
        fail(moments.path(), ": tensor '", name, "' has shape ",
             shape_string(moments.get(name).shape), ", expected ", shape_string(t.shape));
      const std::vector<float> values = moments.read_floats(name);
      if (begin < end)
        std::copy(values.begin() + (begin - t.offset), values.begin() + (end - t.offset),
                  target->begin() + (begin - shard.begin));
    }
  }
  const int64_t updates = point.progress.step - point.progress.skipped_steps;
  const int64_t adamw_steps = strict_integer(moments.metadata_value("adamw_steps"), INT64_MAX,
                                             moments.path() + ": __metadata__ 'adamw_steps'");
  if (adamw_steps != updates)
    fail(moments.path(), ": __metadata__ 'adamw_steps' is ", adamw_steps, " but state.json's ",
         point.progress.step, " steps less ", point.progress.skipped_steps, " skipped make ",
         updates);
  optimizer.set_steps(adamw_steps);
  return point;
}

}  // namespace gattn
