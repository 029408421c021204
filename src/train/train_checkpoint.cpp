#include "train/train_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "io/checkpoint.h"
#include "io/file.h"
#include "io/safetensors.h"
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

void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void save_json(const fs::path& path, const nlohmann::json& j) {
  const std::string text = j.dump(2) + "\n";
  write_text_file_atomically(path.string(), text);
}
}  // namespace

std::string save_training_checkpoint(const std::string& run_dir, const Weights& weights,
                                     AdamW& optimizer, const TrainingProgress& state,
                                     const nlohmann::json& run_config, int keep) {
  const fs::path folder = fs::path(run_dir) / "checkpoints";
  const fs::path final_path = folder / step_name(state.step);
  const fs::path partial = folder / ("." + step_name(state.step) + ".partial");
  fs::remove_all(partial);
  fs::create_directories(partial);
  save_model(partial.string(), weights);
  // Fault injection for the crash-safety test: die as kill -9 would, halfway through.
  if (std::getenv("GATTN_TEST_KILL_IN_CHECKPOINT")) std::raise(SIGKILL);
  std::vector<TensorToWrite> moments;
  for (const TensorSpec& t : weights.layout().tensors()) {
    moments.push_back(
        {"exp_avg." + t.name, Dtype::F32, t.shape, optimizer.first_moment().data() + t.offset});
    moments.push_back(
        {"exp_avg_sq." + t.name, Dtype::F32, t.shape, optimizer.second_moment().data() + t.offset});
  }
  write_safetensors((partial / "optimizer.safetensors").string(), moments,
                    {{"adamw_steps", std::to_string(optimizer.steps())}});
  save_json(partial / "state.json", {{"step", state.step},
                                     {"tokens_seen", state.tokens_seen},
                                     {"skipped_steps", state.skipped_steps},
                                     {"run_config", run_config}});
  sync_folder(partial);
  fs::remove_all(final_path);
  fs::rename(partial, final_path);
  sync_folder(folder);
  const std::vector<fs::path> all = checkpoints(folder);
  for (size_t i = 0; i + size_t(keep) < all.size(); ++i) fs::remove_all(all[i]);
  for (const auto& entry : fs::directory_iterator(folder))  // left by a crash mid-write
    if (entry.path().extension() == ".partial") fs::remove_all(entry.path());
  return final_path.string();
}

std::string latest_checkpoint(const std::string& run_dir) {
  const std::vector<fs::path> all = checkpoints(fs::path(run_dir) / "checkpoints");
  return all.empty() ? "" : all.back().string();
}

TrainingProgress load_training_checkpoint(const std::string& folder, Weights& weights,
                                          AdamW& optimizer) {
  const Config saved = load_config(folder + "/config.json");
  if (config_to_json(saved) != config_to_json(weights.config()))
    fail(folder, ": checkpoint's model config differs from the run's (checkpoint: ",
         config_to_json(saved).dump(), "; run: ", config_to_json(weights.config()).dump(), ")");
  load_params(folder + "/model.safetensors", weights.layout(), weights.data());

  const SafetensorsReader moments(folder + "/optimizer.safetensors");
  for (const TensorSpec& t : weights.layout().tensors()) {
    for (auto [prefix, target] : {std::pair{"exp_avg.", &optimizer.first_moment()},
                                  std::pair{"exp_avg_sq.", &optimizer.second_moment()}}) {
      const std::string name = prefix + t.name;
      if (moments.get(name).shape != t.shape)
        fail(moments.path(), ": tensor '", name, "' has shape ",
             shape_string(moments.get(name).shape), ", expected ", shape_string(t.shape));
      const std::vector<float> values = moments.read_floats(name);
      std::copy(values.begin(), values.end(), target->begin() + t.offset);
    }
  }
  optimizer.set_steps(std::stoll(moments.metadata_value("adamw_steps")));

  nlohmann::json state;
  try {
    state = parse_json_file(folder + "/state.json");
    return {state.at("step").get<int64_t>(), state.at("tokens_seen").get<int64_t>(),
            state.at("skipped_steps").get<int64_t>()};
  } catch (const nlohmann::json::exception& e) {
    fail(folder, "/state.json: unreadable (", e.what(), ")");
  }
}

}  // namespace gattn
