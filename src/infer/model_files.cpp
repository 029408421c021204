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

std::string weight_dtype_list(bool with_w8a8) {
  const size_t n = kWeightDtypes.size() - (with_w8a8 ? 0 : 1);  // w8a8 is the last
  std::string list;
  for (size_t i = 0; i < n; ++i)
    list += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + kWeightDtypes[i];
  return list;
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
    fail("weights dtype '", dtype, "': use ", weight_dtype_list(true));
  const bool as_stored = dtype == "bf16" || (dtype == "auto" && is_gguf_file(path));
  return load_checkpoint_model(path, folder, log, as_stored ? WeightDtype::bf16 : WeightDtype::f32);
}

ExecContext inference_exec() { return {.bf16_weights_on_bf16_gemm = true}; }

Tokenizer load_tokenizer_file(const std::string& path) {
  return is_gguf_file(path) ? gguf_tokenizer(path) : Tokenizer::load(path);
}

std::string model_tokenizer_path(const std::string& path, const std::string& folder) {
  if (!path.empty()) return path;
  if (is_gguf_file(folder)) return folder;
  const std::string beside = folder + "/tokenizer.json";
  return fs::exists(beside) ? beside : "";
}

Tokenizer load_model_tokenizer(const std::string& path, const std::string& folder) {
  const std::string file = model_tokenizer_path(path, folder);
  if (file.empty()) fail(folder, ": no tokenizer.json in the checkpoint folder; pass --tokenizer");
  return load_tokenizer_file(file);
}

}  // namespace gattn
