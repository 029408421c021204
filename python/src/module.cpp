// The `gattn._gattn` extension (nanobind): the engine's models loaded and run from Python, numpy
// in and out. Engine errors (gattn::Error: bad files, bad input) reach Python as ValueError with
// the engine's message; the GIL is released while a pass runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/hf_weights.h"
#include "model/config.h"
#include "model/train_state.h"
#include "util/error.h"

namespace nb = nanobind;

namespace {

using IdArray = nb::ndarray<const int32_t, nb::c_contig, nb::device::cpu>;

// A loaded model: its weights, read-only once loaded, shared by the passes that run on them.
class Model {
 public:
  explicit Model(const std::string& path) : weights_(gattn::load_any_model(path)) {}

  const gattn::Config& config() const { return weights_->config(); }

  // Logits [batch, seq, vocab] (float32) of a rectangular forward pass over ids [seq] or
  // [batch, seq] (int32): every position sees the positions before it in its own row.
  nb::ndarray<nb::numpy, float> forward(const IdArray& ids) const {
    if (ids.ndim() != 1 && ids.ndim() != 2)
      gattn::fail("forward: ids must have 1 or 2 dimensions (seq or batch x seq), got ",
                  ids.ndim());
    if (ids.size() > size_t(INT32_MAX))
      gattn::fail("forward: ", ids.size(), " ids are more than one pass takes (", INT32_MAX, ")");
    const int batch = ids.ndim() == 2 ? int(ids.shape(0)) : 1;
    const int seq = int(ids.shape(ids.ndim() - 1));
    if (batch < 1 || seq < 1) gattn::fail("forward: ids are empty (", batch, " x ", seq, ")");
    const int vocab = config().vocab_size;
    const int32_t* data = ids.data();
    for (int64_t i = 0; i < int64_t(batch) * seq; ++i)
      if (data[i] < 0 || data[i] >= vocab)
        gattn::fail("forward: token id ", data[i], " at index ", i,
                    " is outside the vocabulary [0, ", vocab, ")");
    auto* logits = new std::vector<float>(size_t(batch) * seq * vocab);
    nb::capsule owner(logits, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    {
      const std::vector<int32_t> copy(data, data + int64_t(batch) * seq);  // outlives the GIL
      nb::gil_scoped_release released;
      gattn::TrainState state(*weights_);
      state.forward({copy.data(), nullptr, batch, seq}, logits->data());
    }
    const size_t shape[3] = {size_t(batch), size_t(seq), size_t(vocab)};
    return nb::ndarray<nb::numpy, float>(logits->data(), 3, shape, owner);
  }

 private:
  std::unique_ptr<gattn::Weights> weights_;
};

// The model's config as config.json has it (model/config.h config_to_json), as a Python dict.
nb::object config_dict(const gattn::Config& c) {
  return nb::module_::import_("json").attr("loads")(gattn::config_to_json(c).dump());
}

}  // namespace

NB_MODULE(_gattn, m) {
  m.doc() = "gattn: gated-attention language models (C++ engine), numpy in and out";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const gattn::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  nb::class_<Model>(m, "Model",
                    "A loaded model (gattn checkpoint, Hugging Face folder or GGUF file).")
      .def_prop_ro(
          "config", [](const Model& model) { return config_dict(model.config()); },
          "The model's config as its config.json has it (a dict: vocab_size, gate, ...).")
      .def("forward", &Model::forward, nb::arg("ids"),
           "Logits (float32, [batch, seq, vocab]) of ids (int32, [seq] or [batch, seq]).");
  m.def(
      "load", [](const std::string& path) { return std::make_unique<Model>(path); },
      nb::arg("path"),
      "Loads a model: a gattn checkpoint folder, a Hugging Face folder or a GGUF file.");
}
