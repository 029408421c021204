// gattn corpus: build the default corpus (KJV, World English Bible, Spurgeon's Treasury of David)
// from Debian packages into train.jsonl, val.jsonl and stats.json.
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/format.h"
#include "corpus/corpus.h"

namespace gattn {

void add_corpus_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "corpus", "Build the default corpus (KJV, WEB, Treasury of David) from Debian packages");
  static CorpusOptions options;
  cmd->add_option("--out", options.out_dir, "output folder")->required();
  cmd->add_option("--val-percent", options.val_percent,
                  "share of (book, chapter) keys held out for validation, in percent")
      ->capture_default_str();
  cmd->add_option("--seed", options.seed, "seed of the split and the document order")
      ->capture_default_str();
  cmd->add_option("--sword-dir", options.paths.sword_dir, "SWORD library folder (mods.d, modules)")
      ->capture_default_str();
  cmd->add_option("--bible-program", options.paths.bible_program,
                  "the KJV's `bible` program (Debian bible-kjv)")
      ->capture_default_str();
  cmd->callback([] {
    const auto start = std::chrono::steady_clock::now();
    const CorpusStats stats = build_corpus(options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-8s %-6s %10s %14s\n", "source", "split", "documents", "bytes");
    const char* split_names[2] = {"train", "val"};
    for (const char* source : {"kjv", "web", "tdavid"})
      for (int s : {kTrain, kVal})
        std::printf("%-8s %-6s %10s %14s\n", source, split_names[s],
                    with_commas(stats.per_source.at(source)[s].documents).c_str(),
                    with_commas(stats.per_source.at(source)[s].bytes).c_str());
    for (int s : {kTrain, kVal})
      std::printf("%-8s %-6s %10s %14s\n", "total", split_names[s],
                  with_commas(stats.total[s].documents).c_str(),
                  with_commas(stats.total[s].bytes).c_str());
    const int64_t keys = stats.chapter_keys[kTrain] + stats.chapter_keys[kVal];
    std::printf("(book, chapter) keys: %s train, %s val (%.1f%%), %lld on both sides\n",
                with_commas(stats.chapter_keys[kTrain]).c_str(),
                with_commas(stats.chapter_keys[kVal]).c_str(),
                keys ? 100.0 * double(stats.chapter_keys[kVal]) / double(keys) : 0.0,
                (long long)stats.keys_on_both_sides);
    std::printf("wrote %s/train.jsonl, val.jsonl and stats.json in %.2f s\n",
                options.out_dir.c_str(), seconds);
  });
}

}  // namespace gattn
