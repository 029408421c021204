// What the Python module holds: a loaded model (its weights and tokenizer) and a generation in
// progress, a text piece at a time. Passes run without the GIL.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "infer/generate.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "pass_hooks.h"
#include "tokenizer/tokenizer.h"

namespace gattn::python {

namespace nb = nanobind;
using IdArray = nb::ndarray<const int32_t, nb::c_contig, nb::device::cpu>;

// The sampling and stopping options of Model.generate, as the CLI's generate flags name them.
struct GenerateArgs {
  int max_tokens = 128;
  SamplingOptions sampling;
  std::vector<std::string> stop;
  std::string kv_dtype = "f32";
};

// A generation in progress: each next() runs passes without the GIL until the text grows, then
// returns the new piece (whole UTF-8 characters). Between passes it checks for signals, so that
// Ctrl-C raises KeyboardInterrupt in the caller and leaves the model usable.
class TextIterator {
 public:
  TextIterator(const Weights& weights, const Tokenizer& tokenizer, std::vector<uint32_t> prompt,
               const GenerateOptions& options);
  TextIterator(const TextIterator&) = delete;  // the generation writes into pending_
  TextIterator& operator=(const TextIterator&) = delete;
  std::string next();  // raises StopIteration at the end
  const Generation& generation() const { return *generation_; }

 private:
  std::string pending_;
  std::unique_ptr<Generation> generation_;
};

class Model {
 public:
  // path: a checkpoint folder, a run folder (its newest checkpoint), a Hugging Face folder or a
  // GGUF file; dtype: the CLI's --weights-dtype; tokenizer: a tokenizer file ("": the model's).
  Model(const std::string& path, const std::string& dtype, const std::string& tokenizer);

  const Config& config() const { return weights_->config(); }
  Weights& weights() { return *weights_; }
  const Weights& weights() const { return *weights_; }
  const std::string& folder() const { return folder_; }
  // The model's tokenizer; a ValueError saying why when it has none.
  const Tokenizer& tokenizer() const;
  // The file the tokenizer was read from ("" when the model has none).
  const std::string& tokenizer_path() const { return tokenizer_path_; }

  // Logits [batch, seq, vocab] of ids [seq] or [batch, seq]; with interventions (the CLI's
  // grammar, model/intervention.h) and the request's hooks. With captures or attention asked
  // for: (logits, {site: {layer: array}, "attention": {(layer, head): array}}).
  nb::object forward(const IdArray& ids, const CaptureRequest& request,
                     const std::vector<std::string>& interventions) const;
  std::unique_ptr<TextIterator> generate(const std::vector<uint32_t>& prompt,
                                         const GenerateArgs& args) const;

 private:
  std::string folder_;
  std::unique_ptr<Weights> weights_;
  // The state of the last forward() (its plan kept for the next of the same shape); a forward()
  // that finds it in use by another thread builds its own.
  mutable std::mutex state_mutex_;
  mutable std::unique_ptr<TrainState> state_;
  std::optional<Tokenizer> tokenizer_;
  std::string tokenizer_path_, tokenizer_error_;
};

// The ids of a prompt given as text (encoded by the model's tokenizer) or as a sequence of ids.
std::vector<uint32_t> prompt_ids(const Model& model, const nb::handle& prompt);

}  // namespace gattn::python
