// gattn tokenizer: train a byte-level BPE tokenizer, encode text to ids, decode ids to text, and
// time encoding. Tokenizers are Hugging Face tokenizer.json files (docs/TOKENIZER.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/inputs.h"
#include "cli/validators.h"
#include "io/documents.h"
#include "io/file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

namespace {

using Clock = std::chrono::steady_clock;

std::string read_stdin() {
  std::ostringstream text;
  text << std::cin.rdbuf();
  return text.str();
}

void write_stdout(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size())
    fail("stdout: write failed");
}

void add_train(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("train", "Train a byte-level BPE tokenizer on documents");
  static std::vector<std::string> inputs;
  static int vocab_size = 0, threads = 0;
  static std::string out;
  cmd->add_option("--input", inputs, "text files, folders (every file below) or .jsonl files")
      ->required();
  cmd->add_option("--vocab-size", vocab_size,
                  "tokens in all: 256 bytes + merges + the special token <|endoftext|>")
      ->required();
  cmd->add_option("--out", out, "tokenizer.json to write")->required();
  add_threads_option(cmd, threads, "threads for counting (default: all cores)");
  cmd->callback([] {
    use_threads(threads);
    TrainOptions options;
    options.on_progress = [](const TrainProgress& p) {
      using Stage = TrainProgress::Stage;
      if (p.stage == Stage::counting)
        std::printf("counting: %s documents, %.1f MB, %s distinct pieces  [%.1f s]\n",
                    with_commas(p.documents).c_str(), p.bytes / 1e6,
                    with_commas(p.unique_words).c_str(), p.seconds);
      else if (p.stage == Stage::merging)
        std::printf("merging: %s / %s merges  [%.1f s]\n", with_commas(p.merges_done).c_str(),
                    with_commas(p.merges_planned).c_str(), p.seconds);
      else
        std::printf("merged: %s merges  [%.1f s]\n", with_commas(p.merges_done).c_str(), p.seconds);
      std::fflush(stdout);
    };
    const auto start = Clock::now();
    const Tokenizer tokenizer = Tokenizer::train(inputs, vocab_size, options);
    const double train_s = std::chrono::duration<double>(Clock::now() - start).count();
    tokenizer.save(out);
    if (tokenizer.vocab_size() < vocab_size)
      std::printf("note: the documents ran out of pairs to merge at %d tokens (asked for %d)\n",
                  tokenizer.vocab_size(), vocab_size);
    std::printf(
        "trained %d tokens (256 bytes + %zu merges + 1 special) in %.2f s (%d threads); "
        "wrote %s\n",
        tokenizer.vocab_size(), tokenizer.merges().size(), train_s, num_threads(), out.c_str());
  });
}

void add_encode(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("encode", "Print the ids of a text (a file, or stdin)");
  static std::string tokenizer_path, input;
  cmd->add_option("--tokenizer", tokenizer_path, "tokenizer.json, or a GGUF file (its tokenizer)")
      ->required();
  cmd->add_option("--input", input, "file whose bytes are the text (default: stdin)");
  cmd->callback([] {
    const Tokenizer tokenizer = load_tokenizer_file(tokenizer_path);
    const std::string text = input.empty() ? read_stdin() : read_text_file(input);
    std::string line;
    for (const uint32_t id : tokenizer.encode(text)) {
      if (!line.empty()) line += ' ';
      line += std::to_string(id);
    }
    write_stdout(line + "\n");
  });
}

void add_decode(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("decode", "Write the text of ids read from stdin");
  static std::string tokenizer_path;
  cmd->add_option("--tokenizer", tokenizer_path, "tokenizer.json, or a GGUF file (its tokenizer)")
      ->required();
  cmd->callback([] {
    const Tokenizer tokenizer = load_tokenizer_file(tokenizer_path);
    std::istringstream in(read_stdin());
    std::vector<uint32_t> ids;
    std::string item;
    while (in >> item) {
      uint64_t id = 0;
      const bool digits =
          !item.empty() && item.size() <= 10 &&
          std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) id = std::stoull(item);
      if (!digits || id > UINT32_MAX)
        fail("stdin: item ", ids.size() + 1, " is \"", item.substr(0, 40),
             "\", expected a token id (a non-negative integer)");
      ids.push_back(uint32_t(id));
    }
    write_stdout(tokenizer.decode(ids));
  });
}

void add_bench(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("bench", "Time encoding of documents (median of repeats)");
  static std::string tokenizer_path, mode = "batch";
  static std::vector<std::string> inputs;
  static int repeat = 5, threads = 0;
  cmd->add_option("--tokenizer", tokenizer_path, "tokenizer.json, or a GGUF file (its tokenizer)")
      ->required();
  cmd->add_option("--input", inputs, "text files, folders or .jsonl files")->required();
  cmd->add_option("--mode", mode,
                  "batch (encode_batch, parallel) or sequential (encode, one thread)")
      ->check(CLI::IsMember({"batch", "sequential"}));
  cmd->add_option("--repeat", repeat, "timed runs")->check(positive_integer());
  add_threads_option(cmd, threads, "threads for batch mode (default: all cores)");
  cmd->callback([] {
    use_threads(threads);
    const Tokenizer tokenizer = load_tokenizer_file(tokenizer_path);
    std::vector<std::string> documents;
    int64_t bytes = 0;
    for_each_document(inputs, [&](std::string_view text, const std::string&) {
      documents.emplace_back(text);
      bytes += int64_t(text.size());
    });
    const std::vector<std::string_view> views(documents.begin(), documents.end());
    std::vector<double> ms;
    int64_t tokens = 0;
    for (int r = 0; r < repeat; ++r) {
      tokens = 0;
      const auto start = Clock::now();
      if (mode == "batch") {
        for (const auto& ids : tokenizer.encode_batch(views)) tokens += int64_t(ids.size());
      } else {
        for (const std::string_view text : views) tokens += int64_t(tokenizer.encode(text).size());
      }
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    std::printf(
        "%s encode of %s documents, %.2f MB, %s tokens, %d thread(s): median of %d runs %.1f "
        "ms (%.2f MB/s, %.0f tokens/s)\n",
        mode.c_str(), with_commas(int64_t(documents.size())).c_str(), bytes / 1e6,
        with_commas(tokens).c_str(), mode == "batch" ? num_threads() : 1, repeat, median,
        bytes / 1e3 / median, tokens / median * 1e3);
    std::printf("median_ms=%.3f\n", median);
  });
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenizer",
      "Byte-level BPE tokenizers (Hugging Face tokenizer.json): train, encode, decode");
  cmd->require_subcommand(1);
  add_train(*cmd);
  add_encode(*cmd);
  add_decode(*cmd);
  add_bench(*cmd);
}

}  // namespace gattn
