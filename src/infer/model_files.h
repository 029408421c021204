// A model and its tokenizer as the inference commands and the Python module open them: from a
// checkpoint folder, a run folder (its newest checkpoint), a Hugging Face folder or a GGUF file,
// in the weight storage a --weights-dtype names.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/weights.h"
#include "ops/exec_context.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

namespace gattn {

// `path` is a checkpoint folder, a run folder (its newest checkpoint), a Hugging Face model
// folder or a GGUF file (docs/INTEROP.md). Sets `folder` to the one read.
std::unique_ptr<Weights> load_checkpoint_model(const std::string& path, std::string& folder,
                                               LogSink& log,
                                               WeightDtype storage = WeightDtype::f32);

// The dtypes load_inference_model takes, in the order a help text lists them.
inline const std::vector<std::string> kWeightDtypes = {"auto", "f32",    "bf16", "q8_0",
                                                       "q4_0", "q4_k_m", "w8a8"};
std::string weight_dtype_list(bool with_w8a8);  // "auto, f32, ... or w8a8"

// load_checkpoint_model in the storage `dtype` names: auto (a GGUF file's blocks as stored, f32
// otherwise), f32, bf16, q8_0, q4_0, q4_k_m (quantized in memory as llama.cpp's quantizer writes
// them) or w8a8 (model/quantize_model.h round_weights_to_int8_rows).
std::unique_ptr<Weights> load_inference_model(const std::string& path, const std::string& dtype,
                                              std::string& folder, LogSink& log);

// How the inference commands compute: bf16 weights prefill on the CPU's bf16 GEMM where it has
// one (ExecContext::bf16_weights_on_bf16_gemm).
ExecContext inference_exec();

// A tokenizer.json, or the tokenizer in a GGUF file's metadata (infer/gguf_tokenizer.h).
Tokenizer load_tokenizer_file(const std::string& path);

// The tokenizer file `path` names, else the tokenizer.json in the model's folder (a GGUF file:
// the tokenizer in its metadata).
Tokenizer load_model_tokenizer(const std::string& path, const std::string& folder);
// The file load_model_tokenizer reads ("" when the folder has no tokenizer.json).
std::string model_tokenizer_path(const std::string& path, const std::string& folder);

}  // namespace gattn
