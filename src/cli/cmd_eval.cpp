// gattn eval: loss, perplexity and bits per byte of a checkpoint on a shard or on text.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "io/checkpoint.h"
#include "io/token_shard.h"
#include "model/model.h"
#include "train/evaluate.h"
#include "train/prepare_data.h"
#include "train/train_checkpoint.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;

bool is_shard(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::string(magic, 8) == "GATTNTOK";
}
}  // namespace

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Loss, perplexity and bits per byte of a checkpoint");
  static std::string checkpoint, tokenizer_path, window = "bos";
  static std::vector<std::string> data;
  static int seq = 256, batch = 8, threads = 0;
  static int64_t windows = 0;
  cmd->add_option("--checkpoint", checkpoint, "checkpoint folder, or a run folder (its newest)")
      ->required();
  cmd->add_option("--data", data, "a token shard, or text files / folders / .jsonl")->required();
  cmd->add_option("--tokenizer", tokenizer_path,
                  "tokenizer.json (needed for text and for bits per byte)");
  cmd->add_option("--seq", seq, "tokens per window")->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--windows", windows, "windows to evaluate, in stream order (0: all)");
  cmd->add_option("--window", window, "bos (BOS at position 0) or plain")
      ->check(CLI::IsMember({"bos", "plain"}));
  cmd->add_option("--batch", batch, "windows per forward pass")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", threads, "threads (default: all cores)");
  cmd->callback([] {
    if (threads > 0) set_num_threads(threads);
    std::string folder = checkpoint;
    if (fs::exists(fs::path(checkpoint) / "checkpoints")) folder = latest_checkpoint(checkpoint);
    if (folder.empty()) fail(checkpoint, ": the run has no checkpoint");
    std::vector<float> params;
    Model model(load_model(folder, params));
    model.params() = params;

    std::vector<uint32_t> token_bytes;
    std::string shard_path = data.size() == 1 && is_shard(data[0]) ? data[0] : "";
    std::string temporary;
    if (!tokenizer_path.empty() || shard_path.empty()) {
      if (tokenizer_path.empty()) fail("--tokenizer is needed to evaluate text");
      const Tokenizer tokenizer = Tokenizer::load(tokenizer_path);
      token_bytes = token_byte_lengths(tokenizer);
      if (shard_path.empty()) {
        temporary =
            (fs::temp_directory_path() / ("gattn_eval_" + std::to_string(::getpid()) + ".bin"))
                .string();
        write_shard_from_text(data, tokenizer, temporary);
        shard_path = temporary;
      }
    }
    const TokenShard shard(shard_path);
    if (int64_t(shard.info().vocab_size) > model.config().vocab_size)
      fail(shard_path, ": tokens go up to ", shard.info().vocab_size,
           " but the model's vocab_size is ", model.config().vocab_size);
    const EvalResult r =
        evaluate(model, shard, seq, window == "bos" ? WindowKind::bos : WindowKind::plain, windows,
                 batch, token_bytes.empty() ? nullptr : &token_bytes);
    if (!temporary.empty()) fs::remove(temporary);
    std::printf("checkpoint %s\n%lld windows of %d tokens (%s), %lld target tokens\n",
                folder.c_str(), (long long)r.windows, seq, window.c_str(), (long long)r.tokens);
    std::printf("loss %.4f nats/token, perplexity %.3f", r.loss, r.perplexity);
    if (r.bytes > 0)
      std::printf(", bits per byte %.4f (%lld bytes)", r.bits_per_byte, (long long)r.bytes);
    std::printf("\n");
  });
}

}  // namespace gattn
