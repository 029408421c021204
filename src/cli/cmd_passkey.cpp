// gattn passkey: passkey-retrieval accuracy of a checkpoint by prompt length.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/passkey.h"
#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "cli/validators.h"
#include "io/file.h"
#include "util/threads.h"

namespace gattn {

void add_passkey_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("passkey", "Passkey-retrieval accuracy by prompt length");
  static std::string checkpoint, tokenizer_path, rope_scaling, out;
  static std::vector<int> lengths = {256, 512, 1024};
  static int trials = 20, threads = 0;
  static uint64_t seed = 0;
  cmd->add_option(
         "--checkpoint", checkpoint,
         "checkpoint folder, run folder (its newest), Hugging Face model folder or GGUF file")
      ->required();
  cmd->add_option("--tokenizer", tokenizer_path, "the model's tokenizer.json")->required();
  cmd->add_option("--lengths", lengths, "prompt lengths in tokens")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--trials", trials, "prompts per length (keys and depths from --seed)")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--seed", seed)->capture_default_str();
  cmd->add_option("--rope-scaling", rope_scaling, "an HF rope_scaling object (as gattn eval)");
  cmd->add_option("--out", out, "write the results as JSON here");
  add_threads_option(cmd, threads, "threads (default: all cores)");
  cmd->callback([] {
    use_threads(threads);
    const Tokenizer tokenizer = Tokenizer::load(tokenizer_path);
    std::string folder;
    const int longest = *std::max_element(lengths.begin(), lengths.end());
    const auto weights = with_context(load_checkpoint_model(checkpoint, folder, stderr_log()),
                                      longest, rope_scaling);
    const auto results = passkey_retrieval(*weights, tokenizer, lengths, trials, seed);
    std::printf("checkpoint %s%s%s\n  length  retrieved  answer nats\n", folder.c_str(),
                rope_scaling.empty() ? "" : ", rope scaling ", rope_scaling.c_str());
    nlohmann::json j = nlohmann::json::array();
    for (const PasskeyResult& r : results) {
      std::printf("  %6d  %4d / %-4d  %10.3f\n", r.length, r.retrieved, r.trials, r.answer_nats);
      j.push_back({{"length", r.length},
                   {"trials", r.trials},
                   {"retrieved", r.retrieved},
                   {"accuracy", double(r.retrieved) / r.trials},
                   {"answer_nats", r.answer_nats}});
    }
    if (!out.empty()) {
      const std::string text = j.dump(1) + "\n";
      write_text_file_atomically(out, text);
    }
  });
}

}  // namespace gattn
