// A model on disk: a folder with config.json (docs/MODEL.md) and model.safetensors holding every
// parameter under its Hugging Face name. Both files are written atomically.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "model/config.h"
#include "model/layout.h"
#include "model/weights.h"

namespace gattn {

// gate_json, when not empty, replaces the config's "gate" object (one config, every variant).
Config load_config(const std::string& path, const std::string& gate_json = "");
void save_config(const std::string& path, const Config& config);

// Writes every parameter as F32.
void save_params(const std::string& path, const Weights& weights,
                 const std::map<std::string, std::string>& metadata = {});
// Fills params (layout.total() floats, layout order) from a safetensors file: every tensor of the
// layout must be present with its shape and a float dtype (F32, BF16, F16 converted), all values
// finite, and no other tensor present.
void load_params(const std::string& path, const ParamLayout& layout, float* params);

void save_model(const std::string& folder, const Weights& weights);
std::unique_ptr<Weights> load_model(const std::string& folder);

}  // namespace gattn
