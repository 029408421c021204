// A model on disk: a folder with config.json (docs/MODEL.md) and model.safetensors holding every
// parameter under its Hugging Face name. Both files are written atomically.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "io/staged_folder.h"
#include "model/config.h"
#include "model/layout.h"
#include "model/weights.h"

namespace gattn {

// gate_json, when not empty, replaces the config's "gate" object (one config, every variant).
Config load_config(const std::string& path, const std::string& gate_json = "");
void save_config(const std::string& path, const Config& config);

// Where a loader puts parameter values: `count` floats at layout offset `offset`, within one
// tensor; called from several threads at once for disjoint ranges.
using ParamSink = std::function<void(int64_t offset, const float* values, int64_t count)>;
ParamSink sink_into(float* params);  // a float buffer in layout order
ParamSink sink_into(Weights& w);     // Weights::store: rounded to each tensor's dtype

// Writes every parameter as F32.
void save_params(const std::string& path, const Weights& weights,
                 const std::map<std::string, std::string>& metadata = {});
// Fills params (layout.total() floats, layout order) from a safetensors file: every tensor of the
// layout must be present with its shape and a float dtype (F32, BF16, F16 converted), all values
// finite, and no other tensor present.
void load_params(const std::string& path, const ParamLayout& layout, float* params);

// config.json and model.safetensors into the existing `folder`.
void write_model_files(const std::string& folder, const Weights& weights);
// The model folder written as a whole (io/staged_folder.h).
// A config claiming more layers than `tensors` could hold (each layer has at least four) is refused
// before its layout, a list per layer, is built.
void check_layers_fit(int64_t layers, size_t tensors, const std::string& where);

void save_model(const std::string& folder, const Weights& weights,
                ExistingFolder existing = ExistingFolder::refuse);
// The model in `storage` (f32, or bf16 for inference: read straight into bf16, never holding the
// f32 values of more than a chunk of rows).
std::unique_ptr<Weights> load_model(const std::string& folder,
                                    WeightDtype storage = WeightDtype::f32);

}  // namespace gattn
