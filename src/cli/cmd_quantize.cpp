// gattn quantize: a model (gattn checkpoint or run, Hugging Face folder, GGUF file) written as a
// llama.cpp GGUF file of architecture qwen3, its matrices quantized as llama.cpp's quantizer
// writes them (io/gguf_export.h).
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "infer/gguf_tokenizer.h"
#include "io/gguf_export.h"
#include "io/gguf_model.h"
#include "tokenizer/tokenizer_json.h"
#include "util/error.h"

namespace gattn {

namespace {

// The tokenizer `flag` names (tokenizer.json or GGUF), else the model's own.
TokenizerSpec tokenizer_spec_for(const std::string& flag, const std::string& folder) {
  std::string path = flag;
  if (path.empty()) {
    if (is_gguf_file(folder)) return gguf_tokenizer_spec(GgufReader(folder));
    path = folder + "/tokenizer.json";
    if (!std::filesystem::exists(path))
      fail(folder,
           ": no tokenizer.json in the checkpoint folder; pass --tokenizer (a GGUF file "
           "needs one: llama.cpp reads the vocabulary from it)");
  }
  if (is_gguf_file(path)) return gguf_tokenizer_spec(GgufReader(path));
  return read_tokenizer_json(path);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "quantize",
      "Write a model as a llama.cpp GGUF file (qwen3), quantized as llama.cpp quantizes: q8_0, "
      "q4_0, q4_k_m (Q4_K with Q6_K where llama.cpp puts it), or bf16 / f32");
  static std::string checkpoint, out, type = "q4_k_m", tokenizer;
  static bool force = false;
  cmd->add_option("--checkpoint", checkpoint,
                  "checkpoint folder, run folder (its newest), Hugging Face model folder or GGUF "
                  "file")
      ->required();
  cmd->add_option("--type", type, "q8_0 | q4_0 | q4_k_m | bf16 | f32")
      ->check(CLI::IsMember({"q8_0", "q4_0", "q4_k_m", "bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--out", out, "the GGUF file to write")->required();
  cmd->add_option("--tokenizer", tokenizer,
                  "tokenizer.json or GGUF file whose tokenizer the file carries (default: the "
                  "checkpoint's)");
  cmd->add_flag("--force", force, "replace an existing file (atomically)");
  cmd->callback([] {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(out) && !force) fail(out, ": exists; pass --force to replace it");
    if (fs::exists(out) && fs::equivalent(out, checkpoint, ec))
      fail(out, ": is the checkpoint being read; write another file");
    std::string folder;
    const auto model = load_checkpoint_model(checkpoint, folder, stderr_log(), WeightDtype::f32);
    const TokenizerSpec spec = tokenizer_spec_for(tokenizer, folder);
    export_gguf(*model, &spec, type, out, stderr_log());
    std::printf("wrote %s (qwen3, %s, %.1f MB)\n", out.c_str(), type.c_str(),
                double(fs::file_size(out)) / 1e6);
  });
}

}  // namespace gattn
