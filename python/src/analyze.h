// Model.analyze: `gattn analyze` from Python (analysis/analyze.h), its result as the typed
// gattn.analysis.Analysis.
#pragma once
#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "model.h"

namespace gattn::python {

struct AnalyzeArgs {
  std::vector<std::string> data;  // a token shard, or text files / folders / .jsonl
  std::string tokenizer;          // for text ("": the model's)
  AnalysisOptions options;        // without interventions
  std::vector<std::string> interventions;
};

// The analysis of the model on the data's first windows, without the GIL; an Error for bad data
// or options.
nanobind::object analyze(const Model& model, const AnalyzeArgs& args);

}  // namespace gattn::python
