#include "corpus/corpus.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include "corpus/split.h"
#include "io/file.h"
#include "util/error.h"

namespace gattn {

namespace {

using Json = nlohmann::ordered_json;  // keys in the order written: "text" first

constexpr const char* kSplitNames[2] = {"train", "val"};

struct Placed {
  const Document* document;
  uint64_t order;
};

std::string jsonl_line(const Document& d) {
  Json j;
  j["text"] = d.text;
  j["source"] = d.source;
  j["book"] = d.book;
  j["chapter"] = d.chapter;
  try {
    return j.dump(-1, ' ', false, Json::error_handler_t::strict) + "\n";
  } catch (const Json::exception& e) {
    fail(d.source, " ", d.book, " ", d.chapter, ": text is not valid UTF-8 (", e.what(), ")");
  }
}

Json counts_json(const SplitCount& c) {
  Json j;
  j["documents"] = c.documents;
  j["bytes"] = c.bytes;
  return j;
}

Json stats_json(const CorpusOptions& options, const CorpusStats& stats) {
  Json j;
  j["val_percent"] = options.val_percent;
  j["seed"] = options.seed;
  j["documents"] = stats.total[kTrain].documents + stats.total[kVal].documents;
  j["bytes"] = stats.total[kTrain].bytes + stats.total[kVal].bytes;
  for (int s : {kTrain, kVal}) {
    Json split = counts_json(stats.total[s]);
    split["chapter_keys"] = stats.chapter_keys[s];
    j["splits"][kSplitNames[s]] = split;
  }
  for (const char* source : {"kjv", "web", "tdavid"}) {
    const auto& counts = stats.per_source.at(source);
    for (int s : {kTrain, kVal}) j["sources"][source][kSplitNames[s]] = counts_json(counts[s]);
  }
  return j;
}

void write_jsonl(const std::string& path, std::vector<Placed>& placed) {
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    const Document& x = *a.document;
    const Document& y = *b.document;
    return std::tie(a.order, x.source, x.book, x.chapter) <
           std::tie(b.order, y.source, y.book, y.chapter);
  });
  write_file_atomically(path, [&](const WriteChunk& write) {
    std::string buffer;
    for (const Placed& p : placed) {
      buffer += jsonl_line(*p.document);
      if (buffer.size() > (1 << 20)) {
        write(buffer.data(), buffer.size());
        buffer.clear();
      }
    }
    write(buffer.data(), buffer.size());
  });
}

}  // namespace

CorpusStats build_corpus(const CorpusOptions& options) {
  if (!std::isfinite(options.val_percent) || options.val_percent < 0 || options.val_percent > 100)
    fail("--val-percent: expected a number in [0, 100], found ", options.val_percent);
  if (options.out_dir.empty()) fail("--out: expected an output folder, found an empty path");

  std::vector<Document> documents = kjv_documents(options.paths);
  for (auto* read : {&web_documents, &tdavid_documents}) {
    std::vector<Document> more = read(options.paths);
    std::move(more.begin(), more.end(), std::back_inserter(documents));
  }

  CorpusStats stats;
  for (const char* source : {"kjv", "web", "tdavid"}) stats.per_source[source] = {};
  std::vector<Placed> placed[2];
  std::set<std::pair<std::string, int>> keys[2];
  for (const Document& d : documents) {
    const int split =
        is_validation_chapter(options.seed, d.book, d.chapter, options.val_percent) ? kVal : kTrain;
    placed[split].push_back({&d, document_order_key(options.seed, d.source, d.book, d.chapter)});
    keys[split].emplace(d.book, d.chapter);
    for (SplitCount* c : {&stats.per_source[d.source][split], &stats.total[split]}) {
      c->documents += 1;
      c->bytes += int64_t(d.text.size());
    }
  }
  for (int s : {kTrain, kVal}) stats.chapter_keys[s] = int64_t(keys[s].size());
  for (const auto& key : keys[kTrain]) stats.keys_on_both_sides += keys[kVal].count(key);

  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) fail(options.out_dir, ": cannot create the output folder (", ec.message(), ")");
  const fs::path out(options.out_dir);
  write_jsonl((out / "train.jsonl").string(), placed[kTrain]);
  write_jsonl((out / "val.jsonl").string(), placed[kVal]);
  const std::string stats_text = stats_json(options, stats).dump(2) + "\n";
  write_text_file_atomically((out / "stats.json").string(), stats_text);
  return stats;
}

}  // namespace gattn
