// gattn synthetic: token shards from a synthetic source with a known optimum.
#include <cstdio>

#include "cli/commands.h"
#include "train/bigram_backcopy.h"

namespace gattn {

void add_synthetic_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "synthetic", "Bigram-Backcopy token shards (Guo et al. 2024), a source that grows sinks");
  static BigramBackcopySpec spec;
  static uint64_t train_tokens = 4'000'000, val_tokens = 200'000, seed = 0;
  static std::string out;
  cmd->add_option("--out", out, "folder for train.bin, val.bin and source.json")->required();
  cmd->add_option("--vocab", spec.vocab, "ordinary tokens (BOS is one more)")
      ->capture_default_str();
  cmd->add_option("--triggers", spec.triggers, "trigger tokens, the most frequent ones")
      ->capture_default_str();
  cmd->add_option("--concentration", spec.concentration,
                  "Dirichlet parameter of the transition rows")
      ->capture_default_str();
  cmd->add_option("--chain-seed", spec.chain_seed, "seed of the transition matrix")
      ->capture_default_str();
  cmd->add_option("--seed", seed, "seed of the sampled streams")->capture_default_str();
  cmd->add_option("--train-tokens", train_tokens)->capture_default_str();
  cmd->add_option("--val-tokens", val_tokens)->capture_default_str();
  cmd->callback([] {
    std::fputs(write_bigram_backcopy(spec, train_tokens, val_tokens, seed, out).c_str(), stdout);
  });
}

}  // namespace gattn
