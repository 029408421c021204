// Builds the default corpus: the three sources of sources.h, split by (book, chapter) into
// train.jsonl and val.jsonl (one {"text", "source", "book", "chapter"} object a line) plus
// stats.json, all written atomically. The same options give the same bytes.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "corpus/sources.h"

namespace gattn {

struct CorpusOptions {
  std::string out_dir;
  double val_percent = 5;  // share of (book, chapter) keys in validation, in [0, 100]
  uint64_t seed = 0;       // chooses the split and the document order
  SourcePaths paths;
};

struct SplitCount {
  int64_t documents = 0;
  int64_t bytes = 0;  // UTF-8 bytes of the documents' text
};

enum Split { kTrain = 0, kVal = 1 };

struct CorpusStats {
  std::map<std::string, std::array<SplitCount, 2>> per_source;  // by source name
  std::array<SplitCount, 2> total;
  std::array<int64_t, 2> chapter_keys{0, 0};  // distinct (book, chapter) keys per split
  int64_t keys_on_both_sides = 0;             // always 0; computed from the output, not assumed
};

CorpusStats build_corpus(const CorpusOptions& options);

}  // namespace gattn
