// A llama.cpp GGUF file as a gattn model: the config from the file's metadata and its tensors in
// gattn's layout (Hugging Face names). Architecture `qwen3` (Qwen3's dense layout, no gate).
// Tensor types F32, F16 and BF16 are read into the Weights' storage (F16 widened exactly); the
// quantized types are refused by name (their kernels: issue 34), as are other architectures.
#pragma once
#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/log.h"

namespace gattn {

// True for a regular file that starts with the GGUF magic.
bool is_gguf_file(const std::string& path);

// The model's config from a qwen3 file's metadata; an Error naming the file and key otherwise.
Config gguf_config(const GgufReader& gguf);

// The Hugging Face (gattn layout) name of a qwen3 GGUF tensor name, "" for a name it has none.
std::string hf_name_of_gguf_tensor(const std::string& gguf_name);

std::unique_ptr<Weights> load_gguf_model(const std::string& path, LogSink& log = discard_log(),
                                         WeightDtype storage = WeightDtype::f32);

}  // namespace gattn
