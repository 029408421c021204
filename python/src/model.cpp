#include "model.h"

#include <nanobind/stl/string.h>

#include <utility>

#include "infer/model_files.h"
#include "model/intervention.h"
#include "owned_array.h"
#include "python_log.h"
#include "util/error.h"

namespace gattn::python {

TextIterator::TextIterator(const Weights& weights, const Tokenizer& tokenizer,
                           std::vector<uint32_t> prompt, const GenerateOptions& options)
    : generation_(std::make_unique<Generation>(
          weights, tokenizer, std::move(prompt), options,
          [this](std::string_view piece) { pending_.append(piece); })) {}

std::string TextIterator::next() {
  while (pending_.empty()) {
    if (generation_->done()) throw nb::stop_iteration();
    {
      nb::gil_scoped_release released;
      generation_->step();
    }
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  }
  return std::exchange(pending_, {});
}

Model::Model(const std::string& path, const std::string& dtype, const std::string& tokenizer)
    : weights_(load_inference_model(path, dtype, folder_, python_log())) {
  tokenizer_path_ = model_tokenizer_path(tokenizer, folder_);
  try {
    tokenizer_ = load_model_tokenizer(tokenizer_path_, folder_);
  } catch (const Error& e) {
    if (!tokenizer.empty()) throw;  // the file asked for must load
    tokenizer_error_ = e.what();
  }
}

const Tokenizer& Model::tokenizer() const {
  if (!tokenizer_) fail(tokenizer_error_, " (gattn.load(path, tokenizer=...))");
  return *tokenizer_;
}

namespace {
// The [batch, seq] of ids [seq] or [batch, seq]; an Error for other shapes.
std::pair<int, int> batch_and_seq(const IdArray& ids) {
  if (ids.ndim() != 1 && ids.ndim() != 2)
    fail("forward: ids must have 1 or 2 dimensions (seq or batch x seq), got ", ids.ndim());
  if (ids.size() > size_t(INT32_MAX))
    fail("forward: ", ids.size(), " ids are more than one pass takes (", INT32_MAX, ")");
  const int batch = ids.ndim() == 2 ? int(ids.shape(0)) : 1;
  const int seq = int(ids.shape(ids.ndim() - 1));
  if (batch < 1 || seq < 1) fail("forward: ids are empty (", batch, " x ", seq, ")");
  return {batch, seq};
}

// Clears a state's hooks when the pass ends, by an error too.
struct HooksSet {
  TrainState& state;
  HooksSet(TrainState& s, PassHooks* hooks) : state(s) { state.set_hooks(hooks); }
  ~HooksSet() { state.set_hooks(nullptr); }
};
}  // namespace

nb::object Model::forward(const IdArray& ids, const CaptureRequest& request,
                          const std::vector<std::string>& interventions) const {
  const auto [batch, seq] = batch_and_seq(ids);
  Interventions changes;
  for (const std::string& spec : interventions)
    add_intervention(changes, spec, config().num_hidden_layers, seq);
  std::optional<InterventionHooks> intervention_hooks;
  if (changes.any()) intervention_hooks.emplace(changes, *weights_);
  const bool wants_results = !request.sites.empty() || !request.attention.empty();
  std::optional<PythonPassHooks> python_hooks;
  if (wants_results || !request.hooks.empty()) python_hooks.emplace(config(), request, batch, seq);
  std::vector<PassHooks*> chain;  // interventions first: the hooks see what they changed
  if (intervention_hooks) chain.push_back(&*intervention_hooks);
  if (python_hooks) chain.push_back(&*python_hooks);
  HookChain hooks(chain);

  const int vocab = config().vocab_size;
  std::vector<float> logits(size_t(batch) * seq * vocab);
  // a copy: without the GIL, another thread may change the array while the pass runs
  const std::vector<int32_t> copy(ids.data(), ids.data() + int64_t(batch) * seq);
  std::unique_lock lock(state_mutex_, std::try_to_lock);  // never waits: no deadlock on the GIL
  std::unique_ptr<TrainState> own;
  if (lock.owns_lock() && !state_) state_ = std::make_unique<TrainState>(*weights_);
  if (!lock.owns_lock()) own = std::make_unique<TrainState>(*weights_);
  TrainState& state = own ? *own : *state_;
  {
    nb::gil_scoped_release released;
    HooksSet set(state, chain.empty() ? nullptr : &hooks);
    state.forward({copy.data(), nullptr, batch, seq}, logits.data());
  }
  // results() reads the state's activations (attention): before another pass can run on it
  nb::object captured = python_hooks ? nb::object(python_hooks->results()) : nb::none();
  nb::object out =
      nb::cast(owned_array(std::move(logits), {size_t(batch), size_t(seq), size_t(vocab)}));
  return wants_results ? nb::make_tuple(out, captured) : out;
}

std::unique_ptr<TextIterator> Model::generate(const std::vector<uint32_t>& prompt,
                                              const GenerateArgs& args) const {
  if (args.kv_dtype != "f32" && args.kv_dtype != "bf16")
    fail("generate: kv_dtype '", args.kv_dtype, "': use f32 or bf16");
  check_sampling_options(args.sampling);
  const Tokenizer& t = tokenizer();
  const GenerateOptions options = {
      .max_tokens = args.max_tokens,
      .sampling = args.sampling,
      .stop = args.stop,
      .end_tokens = {t.end_of_text_id()},
      .exec = inference_exec(),
      .keys_values = args.kv_dtype == "bf16" ? CacheDtype::bf16 : CacheDtype::f32};
  return std::make_unique<TextIterator>(*weights_, t, prompt, options);
}

std::vector<uint32_t> prompt_ids(const Model& model, const nb::handle& prompt) {
  if (nb::isinstance<nb::str>(prompt))
    return model.tokenizer().encode(nb::cast<std::string>(prompt));
  std::vector<uint32_t> ids;
  for (nb::handle id : prompt) {
    const int64_t value = nb::cast<int64_t>(id);
    if (value < 0 || value > int64_t(UINT32_MAX)) fail("generate: prompt token id ", value);
    ids.push_back(uint32_t(value));
  }
  return ids;
}

}  // namespace gattn::python
