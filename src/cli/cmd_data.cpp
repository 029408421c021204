// gattn data: text (files, folders, JSONL) to a token shard.
#include <cstdio>

#include "cli/commands.h"
#include "cli/format.h"
#include "train/prepare_data.h"

namespace gattn {

void add_data_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("data", "Tokenize text into a token shard for training");
  static std::string tokenizer_path, out;
  static std::vector<std::string> inputs;
  cmd->add_option("--tokenizer", tokenizer_path, "tokenizer.json")->required();
  cmd->add_option("--input", inputs, "text files, folders or .jsonl files")->required();
  cmd->add_option("--out", out, "output shard")->required();
  cmd->callback([] {
    const Tokenizer tokenizer = Tokenizer::load(tokenizer_path);
    const ShardStats s = write_shard_from_text(inputs, tokenizer, out);
    std::printf("%s: %s documents, %s tokens, %s bytes of text (%.2f bytes per token), %.1f s\n",
                out.c_str(), with_commas(s.documents).c_str(), with_commas(s.tokens).c_str(),
                with_commas(s.text_bytes).c_str(), double(s.text_bytes) / double(s.tokens),
                s.seconds);
  });
}

}  // namespace gattn
