// gattn export: a model (gattn checkpoint or Hugging Face folder) written as a Hugging Face folder
// in the Qwen3, authors' gated Qwen3 or Qwen3-Next layout (docs/INTEROP.md).
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/commands.h"
#include "cli/stderr_log.h"
#include "cli/validators.h"
#include "io/hf_export.h"
#include "io/hf_weights.h"

namespace gattn {

void add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "export",
      "Write a model as a Hugging Face folder (qwen3 | authors | qwen3_next | qwen3_5 layout)");
  static std::string checkpoint, out, format = "qwen3", dtype = "bf16", tokenizer;
  static int64_t max_shard_bytes = int64_t(5) << 30;
  cmd->add_option("--checkpoint", checkpoint, "model folder (gattn or Hugging Face)")->required();
  cmd->add_option("--format", format, "qwen3 | authors | qwen3_next | qwen3_5")
      ->check(CLI::IsMember({"qwen3", "authors", "qwen3_next", "qwen3_5"}));
  cmd->add_option("--out", out, "output folder")->required();
  cmd->add_option("--dtype", dtype, "bf16 | f32")->check(CLI::IsMember({"bf16", "f32"}));
  cmd->add_option("--max-shard-bytes", max_shard_bytes,
                  "shard the weights above this many bytes (default 5 GiB)")
      ->check(positive_integer());
  cmd->add_option("--tokenizer", tokenizer,
                  "tokenizer.json to copy (default: the checkpoint's, if it has one)");
  static bool force = false;
  cmd->add_flag("--force", force, "replace a folder that is not empty (as a whole, atomically)");
  cmd->callback([] {
    static const std::map<std::string, HfExportFormat> formats = {
        {"qwen3", HfExportFormat::qwen3},
        {"authors", HfExportFormat::authors},
        {"qwen3_next", HfExportFormat::qwen3_next},
        {"qwen3_5", HfExportFormat::qwen3_5}};
    const ExistingFolder existing = force ? ExistingFolder::replace : ExistingFolder::refuse;
    check_output_folder(out, existing, "--out");
    check_output_apart_from_source(checkpoint, out);
    const std::unique_ptr<Weights> weights = load_any_model(checkpoint, stderr_log());
    std::string tok = tokenizer;
    if (tok.empty() && std::filesystem::is_regular_file(checkpoint + "/tokenizer.json"))
      tok = checkpoint + "/tokenizer.json";
    export_hf(*weights, out,
              {.format = formats.at(format),
               .dtype = dtype == "f32" ? Dtype::F32 : Dtype::BF16,
               .max_shard_bytes = max_shard_bytes,
               .tokenizer_json = tok,
               .existing = existing});
    std::printf("wrote %s (%s layout, %s)%s\n", out.c_str(), format.c_str(), dtype.c_str(),
                tok.empty() ? "" : ", with tokenizer.json");
  });
}

}  // namespace gattn
