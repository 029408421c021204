#include "io/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace gattn {

Config load_config(const std::string& path, const std::string& gate_json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": not valid JSON (", e.what(), ")");
  }
  if (gate_json.empty()) return config_from_json(j, path);
  try {
    j["gate"] = nlohmann::json::parse(gate_json);
  } catch (const nlohmann::json::exception& e) {
    fail("--gate: not valid JSON (", e.what(), ")");
  }
  return config_from_json(j, path + " with --gate");
}

void save_config(const std::string& path, const Config& config) {
  const std::string text = config_to_json(config).dump(2) + "\n";
  write_text_file_atomically(path, text);
}

void save_params(const std::string& path, const Weights& weights,
                 const std::map<std::string, std::string>& metadata) {
  std::vector<TensorToWrite> tensors;
  for (const TensorSpec& t : weights.layout().tensors())
    tensors.push_back({t.name, Dtype::F32, t.shape, weights.at(t.offset)});
  write_safetensors(path, tensors, metadata);
}

void load_params(const std::string& path, const ParamLayout& layout, float* params) {
  const SafetensorsReader file(path);
  for (const TensorView& t : file.tensors())
    if (!layout.find(t.name))
      fail(path, ": unexpected tensor '", t.name, "' (does the config match this checkpoint?)");
  for (const TensorSpec& spec : layout.tensors()) {
    const TensorView* t = file.find(spec.name);
    if (!t)
      fail(path, ": tensor '", spec.name, "' is missing (does the config match this checkpoint?)");
    if (t->shape != spec.shape)
      fail(path, ": tensor '", spec.name, "' has shape ", shape_string(t->shape), ", expected ",
           shape_string(spec.shape));
    if (t->dtype != Dtype::F32 && t->dtype != Dtype::BF16 && t->dtype != Dtype::F16)
      fail(path, ": tensor '", spec.name, "' has dtype ", dtype_name(t->dtype),
           ", expected F32, BF16 or F16");
    const std::vector<float> values = file.read_floats(spec.name);
    for (int64_t i = 0; i < spec.numel; ++i)
      if (!std::isfinite(values[i]))
        fail(path, ": tensor '", spec.name, "' has a non-finite value (", values[i], ") at index ",
             i);
    std::copy(values.begin(), values.end(), params + spec.offset);
  }
}

void save_model(const std::string& folder, const Weights& weights) {
  std::filesystem::create_directories(folder);
  save_config(folder + "/config.json", weights.config());
  save_params(folder + "/model.safetensors", weights);
}

std::unique_ptr<Weights> load_model(const std::string& folder) {
  auto weights = std::make_unique<Weights>(load_config(folder + "/config.json"));
  load_params(folder + "/model.safetensors", weights->layout(), weights->data());
  return weights;
}

}  // namespace gattn
