#include "analyze.h"

#include <nanobind/stl/string.h>

#include "infer/held_out_tokens.h"
#include "model/intervention.h"
#include "util/error.h"

namespace gattn::python {

nanobind::object analyze(const Model& model, const AnalyzeArgs& args) {
  AnalysisOptions options = args.options;
  if (args.data.empty()) fail("analyze: no data");
  const Config& c = model.config();
  for (const std::string& spec : args.interventions)
    add_intervention(options.interventions, spec, c.num_hidden_layers, options.seq_len);
  const bool text = args.data.size() > 1 || !is_token_shard_file(args.data[0]);
  const std::string tokenizer = !args.tokenizer.empty() ? args.tokenizer
                                : text                  ? model.tokenizer_path()
                                                        : "";
  std::string document;
  {
    nanobind::gil_scoped_release released;
    const HeldOutTokens tokens(args.data, tokenizer, c.vocab_size);
    document = to_json(gattn::analyze(model.weights(), tokens.shard(), options)).dump();
  }
  const nanobind::object json = nanobind::module_::import_("json").attr("loads")(document);
  return nanobind::module_::import_("gattn.analysis").attr("Analysis").attr("from_json")(json);
}

}  // namespace gattn::python
