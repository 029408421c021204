#include "io/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

Config load_config(const std::string& path, const std::string& gate_json) {
  nlohmann::json j = parse_json_file(path);
  if (gate_json.empty()) return config_from_json(j, path);
  j["gate"] = parse_json_text(gate_json, "--gate");
  return config_from_json(j, path + " with --gate");
}

void save_config(const std::string& path, const Config& config) {
  const std::string text = config_to_json(config).dump(2) + "\n";
  write_text_file_atomically(path, text);
}

void save_params(const std::string& path, const ParamLayout& layout,
                 const std::vector<float>& params,
                 const std::map<std::string, std::string>& metadata) {
  std::vector<TensorToWrite> tensors;
  for (const TensorSpec& t : layout.tensors())
    tensors.push_back({t.name, Dtype::F32, t.shape, params.data() + t.offset});
  write_safetensors(path, tensors, metadata);
}

void load_params(const std::string& path, const ParamLayout& layout, std::vector<float>& params) {
  const SafetensorsReader file(path);
  for (const TensorView& t : file.tensors())
    if (!layout.find(t.name))
      fail(path, ": unexpected tensor '", t.name, "' (does the config match this checkpoint?)");
  // Every shape is checked against the file before anything is allocated: the sizes then come
  // from the file, not from a config.json that may claim any dimension.
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
  }
  params.assign(layout.total(), 0.0f);
  for (const TensorSpec& spec : layout.tensors()) {
    const std::vector<float> values = file.read_floats(spec.name);
    for (int64_t i = 0; i < spec.numel; ++i)
      if (!std::isfinite(values[i]))
        fail(path, ": tensor '", spec.name, "' has a non-finite value (", values[i], ") at index ",
             i);
    std::copy(values.begin(), values.end(), params.begin() + spec.offset);
  }
}

void save_model(const std::string& folder, const Config& config, const std::vector<float>& params) {
  std::filesystem::create_directories(folder);
  save_config(folder + "/config.json", config);
  save_params(folder + "/model.safetensors", ParamLayout(config), params);
}

Config load_model(const std::string& folder, std::vector<float>& params) {
  const Config config = load_config(folder + "/config.json");
  load_params(folder + "/model.safetensors", ParamLayout(config), params);
  return config;
}

}  // namespace gattn
