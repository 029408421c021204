#include "io/checkpoint.h"

#include <algorithm>
#include <cmath>
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

void save_params(const std::string& path, const Weights& weights,
                 const std::map<std::string, std::string>& metadata) {
  std::vector<TensorToWrite> tensors;
  for (const TensorSpec& t : weights.layout().tensors())
    tensors.push_back({t.name, Dtype::F32, t.shape, weights.at(t.offset)});
  write_safetensors(path, tensors, metadata);
}

namespace {
// Every tensor of the layout is in the file with its shape and a float dtype, and nothing else is.
void require_params(const SafetensorsReader& file, const ParamLayout& layout) {
  const std::string& path = file.path();
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
  }
}

// Each tensor converted to floats a chunk of rows at a time (the chunk's mapped pages released
// after it), checked finite, and handed to `put`.
void read_params(const SafetensorsReader& file, const ParamLayout& layout, const ParamSink& put) {
  const std::string& path = file.path();
  constexpr int64_t kChunkValues = int64_t(1) << 21;
  std::vector<float> values;
  for (const TensorSpec& spec : layout.tensors()) {
    const TensorView& t = file.get(spec.name);
    const size_t value_bytes = dtype_bytes(t.dtype);
    for (int64_t at = 0; at < spec.numel; at += kChunkValues) {
      const int64_t count = std::min(kChunkValues, spec.numel - at);
      values.resize(count);
      convert_to_floats(t.dtype, t.data + at * value_bytes, count, values.data());
      for (int64_t i = 0; i < count; ++i)
        if (!std::isfinite(values[i]))
          fail(path, ": tensor '", spec.name, "' has a non-finite value (", values[i],
               ") at index ", at + i);
      put(spec.offset + at, values.data(), count);
      release_mapped_pages(t.data + at * value_bytes, size_t(count) * value_bytes);
    }
  }
}
}  // namespace

ParamSink sink_into(float* params) {
  return [params](int64_t offset, const float* values, int64_t count) {
    std::copy_n(values, count, params + offset);
  };
}

ParamSink sink_into(Weights& w) {
  return
      [&w](int64_t offset, const float* values, int64_t count) { w.store(offset, values, count); };
}

void load_params(const std::string& path, const ParamLayout& layout, float* params) {
  const SafetensorsReader file(path, Checksums::required);
  require_params(file, layout);
  read_params(file, layout, sink_into(params));
}

void write_model_files(const std::string& folder, const Weights& weights) {
  save_config(folder + "/config.json", weights.config());
  save_params(folder + "/model.safetensors", weights);
}

void save_model(const std::string& folder, const Weights& weights, ExistingFolder existing) {
  StagedFolder staged(folder, existing);
  write_model_files(staged.path(), weights);
  staged.publish();
}

void check_layers_fit(int64_t layers, size_t tensors, const std::string& where) {
  if (layers > int64_t(tensors) / 4)
    fail(where, ": num_hidden_layers ", layers, " needs at least ", 4 * layers,
         " tensors but the weight files hold ", tensors);
}

namespace {
// A config.json from Hugging Face that lost its model_type would otherwise be read as gattn's and
// fail on the first field gattn does not know.
void refuse_hf_config_without_model_type(const std::string& path) {
  const nlohmann::json j = parse_json_file(path);
  if (!j.is_object()) return;
  for (const char* key : {"architectures", "transformers_version", "torch_dtype"})
    if (j.contains(key))
      fail(path, ": field 'model_type' is required in a Hugging Face config.json (this one has '",
           key, "' but no model_type; supported: qwen3, qwen3_next, qwen3_5, qwen3_5_text)");
}
}  // namespace

std::unique_ptr<Weights> load_model(const std::string& folder, WeightDtype storage) {
  refuse_hf_config_without_model_type(folder + "/config.json");
  const Config config = load_config(folder + "/config.json");
  // Shapes first: the buffer is then sized by the file, not by whatever config.json claims.
  const SafetensorsReader file(folder + "/model.safetensors", Checksums::required);
  check_layers_fit(config.num_hidden_layers, file.tensors().size(), folder + "/config.json");
  require_params(file, ParamLayout(config));
  auto weights = std::make_unique<Weights>(config, storage);
  read_params(file, weights->layout(), sink_into(*weights));
  return weights;
}

}  // namespace gattn
