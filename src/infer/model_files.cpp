#include "infer/model_files.h"

#include <filesystem>

#include "infer/gguf_tokenizer.h"
#include "io/gguf_model.h"
#include "io/hf_weights.h"
#include "model/quantize_model.h"
#include "train/train_checkpoint.h"
#include "util/error.h"

namespace gattn {

namespace fs = std::filesystem;

std::unique_ptr<Weights> load_checkpoint_model(const std::string& path, std::string& folder,
                                               LogSink& log, WeightDtype storage) {
  folder = fs::exists(fs::path(path) / "checkpoints") ? latest_checkpoint(path) : path;
  if (folder.empty()) fail(path, ": the run has no checkpoint");
  return load_any_model(folder, log, storage);
}

std::unique_ptr<Weights> load_inference_model(const std::string& path, const std::string& dtype,
                                              std::string& folder, LogSink& log) {
  if (dtype == "w8a8") {
    auto model = load_checkpoint_model(path, folder, log, WeightDtype::f32);
    round_weights_to_int8_rows(*model);
    return model;
  }
  QuantMix mix;
  if (quant_mix_of(dtype, &mix)) {
    const auto model = load_checkpoint_model(path, folder, log, WeightDtype::f32);
    return quantize_model(*model, mix);
  }
  if (dtype != "auto" && dtype != "f32" && dtype != "bf16")
    fail("weights dtype '", dtype, "': use auto, f32, bf16, q8_0, q4_0, q4_k_m or w8a8");
  const bool as_stored = dtype == "bf16" || (dtype == "auto" && is_gguf_file(path));
  return load_checkpoint_model(path, folder, log, as_stored ? WeightDtype::bf16 : WeightDtype::f32);
}

ExecContext inference_exec() { return {.bf16_weights_on_bf16_gemm = true}; }

Tokenizer load_tokenizer_file(const std::string& path) {
  return is_gguf_file(path) ? gguf_tokenizer(path) : Tokenizer::load(path);
}

Tokenizer load_model_tokenizer(const std::string& path, const std::string& folder) {
  if (!path.empty()) return load_tokenizer_file(path);
  if (is_gguf_file(folder)) return gguf_tokenizer(folder);
  const std::string beside = folder + "/tokenizer.json";
  if (fs::exists(beside)) return Tokenizer::load(beside);
  fail(folder, ": no tokenizer.json in the checkpoint folder; pass --tokenizer");
}

}  // namespace gattn
