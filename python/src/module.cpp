// The `gattn._gattn` extension (nanobind): the engine's models loaded and run from Python, numpy
// in and out. Engine errors (gattn::Error: bad files, bad input) reach Python as ValueError with
// the engine's message; the GIL is released while a pass runs.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "analyze.h"
#include "infer/model_files.h"
#include "io/token_shard.h"
#include "model.h"
#include "model/config.h"
#include "owned_array.h"
#include "parameters.h"
#include "train.h"
#include "util/error.h"
#include "util/threads.h"

namespace nb = nanobind;
using namespace nb::literals;
using gattn::python::GenerateArgs;
using gattn::python::Model;
using gattn::python::TextIterator;

namespace {

// The model's config as config.json has it (model/config.h config_to_json), as a Python dict.
nb::dict config_dict(const gattn::Config& c) {
  return nb::borrow<nb::dict>(
      nb::module_::import_("json").attr("loads")(gattn::config_to_json(c).dump()));
}

// Type annotations of the stubs (nanobind's stubgen) where the C++ types say "object" (a macro:
// nb::sig keeps a pointer, so the signatures are string literals).
#define GATTN_INTERVENTIONS_TYPE \
  "str | collections.abc.Sequence[str] | collections.abc.Mapping[str, str | float] | None"

// interventions as Model.forward takes them: None, one spec, a sequence of specs, or a dict
// {"[layer:L:]TARGET[@POSITION]": ACTION} with ACTION a string or a number (constant:X).
std::vector<std::string> intervention_specs(nb::handle specs) {
  if (specs.is_none()) return {};
  if (nb::isinstance<nb::str>(specs)) return {nb::cast<std::string>(specs)};
  if (!nb::isinstance<nb::dict>(specs)) return nb::cast<std::vector<std::string>>(specs);
  std::vector<std::string> out;
  for (auto [target, action] : nb::borrow<nb::dict>(specs)) {
    const std::string left = nb::cast<std::string>(target);
    if (nb::isinstance<nb::str>(action))
      out.push_back(left + "=" + nb::cast<std::string>(action));
    else if (nb::isinstance<nb::float_>(action) || nb::isinstance<nb::int_>(action))
      out.push_back(left + "=constant:" + nb::cast<std::string>(nb::repr(action)));
    else
      gattn::fail("interventions: the action of '", left, "' must be a string or a number");
  }
  return out;
}

// Bytes as text; bytes that are not UTF-8 (a token's part of a character) become U+FFFD.
nb::str text_of(const std::string& bytes) {
  return nb::steal<nb::str>(
      PyUnicode_DecodeUTF8(bytes.data(), Py_ssize_t(bytes.size()), "replace"));
}

void bind_tokenizer(nb::module_& m) {
  nb::class_<gattn::Tokenizer>(m, "Tokenizer",
                               "A byte-level BPE tokenizer (tokenizer.json or a GGUF file's).")
      .def_static(
          "load", [](const std::string& path) { return gattn::load_tokenizer_file(path); },
          "path"_a, "Reads a tokenizer.json, or the tokenizer in a GGUF file's metadata.")
      .def(
          "encode",
          [](const gattn::Tokenizer& t, const std::string& text) {
            const std::vector<uint32_t> ids = t.encode(text);
            return std::vector<int32_t>(ids.begin(), ids.end());
          },
          "text"_a, "The token ids of text (a list of int).")
      .def(
          "decode",
          [](const gattn::Tokenizer& t, const std::vector<uint32_t>& ids) {
            return text_of(t.decode(ids));
          },
          "ids"_a, "The text of ids (bytes that are not whole UTF-8 characters become U+FFFD).")
      .def_prop_ro("vocab_size", &gattn::Tokenizer::vocab_size, "One more than the largest id.");
}

void bind_generation(nb::module_& m) {
  nb::class_<TextIterator>(m, "TextIterator",
                           "The text of a generation, piece by piece (whole UTF-8 characters).")
      .def(
          "__iter__", [](nb::handle self) { return self; }, nb::rv_policy::reference)
      .def("__next__", [](TextIterator& it) { return text_of(it.next()); })
      .def_prop_ro(
          "finish_reason", [](const TextIterator& it) { return it.generation().finish_reason(); },
          "'' while running; then 'length' (max_tokens) or 'stop' (end token or stop string).")
      .def_prop_ro(
          "tokens",
          [](const TextIterator& it) {
            const std::vector<uint32_t>& ids = it.generation().tokens();
            return std::vector<int32_t>(ids.begin(), ids.end());
          },
          "The generated token ids so far (an end token included).")
      .def_prop_ro(
          "text_bytes",
          [](const TextIterator& it) {
            const std::string& text = it.generation().text();
            return nb::bytes(text.data(), text.size());
          },
          "The text so far as bytes, exactly as `gattn generate` prints it (the pieces are str: "
          "bytes that are not UTF-8 become U+FFFD there).")
      .def_prop_ro(
          "timings",
          [](const TextIterator& it) {
            const gattn::GenerateResult r = it.generation().result();
            nb::dict d;
            d["prompt_tokens"] = r.prompt_tokens;
            d["prefill_seconds"] = r.prefill_seconds;
            d["decode_seconds"] = r.decode_seconds;
            return d;
          },
          "The engine's times so far: prompt_tokens, prefill_seconds, decode_seconds (sampling "
          "and decoding, as `gattn generate --stats` reports them).");
}

void bind_model(nb::module_& m) {
  nb::class_<Model>(m, "Model",
                    "A loaded model (gattn checkpoint or run folder, Hugging Face folder or GGUF "
                    "file).")
      .def_prop_ro(
          "config", [](const Model& model) { return config_dict(model.config()); },
          "The model's config as its config.json has it (a dict: vocab_size, gate, ...).")
      .def_prop_ro("path", &Model::folder, "The folder or file the weights were read from.")
      .def_prop_ro("tokenizer", &Model::tokenizer, nb::rv_policy::reference_internal,
                   "The model's tokenizer (ValueError when it has none).")
      .def(
          "parameters",
          [](nb::handle self, bool writable) {
            return gattn::python::parameters(nb::cast<Model&>(self).weights(), self, writable);
          },
          nb::kw_only(), "writable"_a = false,
          "The model's tensors, {name: array} (Hugging Face names), views of the engine's own "
          "storage: f32 as float32, bf16 as ml_dtypes.bfloat16 where installed (else uint16 "
          "bits), llama.cpp block formats as their raw bytes (uint8 [rows, row bytes]). "
          "Read-only; writable=True gives float32 views to change in place (f32 storage only: "
          "load with dtype='f32'; not while another thread runs a pass).")
      .def(
          "forward",
          [](const Model& model, const gattn::python::IdArray& ids,
             const std::vector<std::string>& capture,
             const std::vector<std::pair<int, int>>& attention,
             const std::map<std::string, nb::object>& hooks, nb::handle interventions,
             int64_t max_capture_bytes) {
            const gattn::python::CaptureRequest request = {.sites = capture,
                                                           .attention = attention,
                                                           .hooks = hooks,
                                                           .max_bytes = max_capture_bytes};
            return model.forward(ids, request, intervention_specs(interventions));
          },
          "ids"_a, nb::kw_only(), "capture"_a = std::vector<std::string>{},
          "attention"_a = std::vector<std::pair<int, int>>{},
          "hooks"_a = std::map<std::string, nb::object>{}, "interventions"_a = nb::none(),
          "max_capture_bytes"_a = int64_t(1) << 30,
          nb::sig("def forward(self, ids: typing.Annotated[numpy.typing.NDArray[numpy.int32], "
                  "dict(order='C', device='cpu')], *, capture: collections.abc.Sequence[str] = "
                  "[], attention: collections.abc.Sequence[tuple[int, int]] = [], hooks: "
                  "collections.abc.Mapping[str, collections.abc.Callable[[int, "
                  "numpy.typing.NDArray[numpy.float32]], None]] = {}, "
                  "interventions: " GATTN_INTERVENTIONS_TYPE
                  " = None, max_capture_bytes: int = 1073741824) -> "
                  "numpy.typing.NDArray[numpy.float32] | tuple[numpy.typing.NDArray["
                  "numpy.float32], dict]"),
          "Logits (float32, [batch, seq, vocab]) of ids (int32, [seq] or [batch, seq]; each row a "
          "sequence from position 0).\n\n"
          "capture: site names (gattn.SITES) whose tensors come back, [batch, seq, width] per "
          "layer. attention: (layer, head) pairs whose probabilities [batch, seq (query), seq "
          "(key)] are recomputed from the pass's q, k and log-sum-exp. With either, the result "
          "is (logits, {site: {layer: array}, 'attention': {(layer, head): array}}); a capture "
          "above max_capture_bytes raises ValueError naming its size.\n"
          "hooks: {site: fn(layer, array)} called during the pass with a view of the pass's own "
          "tensor, valid only during the call; at attention_v, gate_output, delta_net_gate, "
          "mlp_output and layer_output it is writable and the model reads on what fn leaves "
          "there. delta_net_state is "
          "[batch, value heads, key dim, value dim]: each sequence's recurrent state after its "
          "last token.\n"
          "interventions: the CLI's --intervene specs (a string or a list), e.g. "
          "'layer:0:gate=closed', or a dict {target: action}, e.g. {'layer:0:gate': 'closed', "
          "'gate@first': 0.15} (a number: constant:X).")
      .def(
          "generate",
          [](const Model& model, nb::handle prompt, int max_tokens, double temperature, int top_k,
             double top_p, double min_p, double repeat_penalty, uint64_t seed,
             const std::vector<std::string>& stop, const std::string& kv_dtype) {
            const GenerateArgs args = {
                .max_tokens = max_tokens,
                .sampling = {temperature, top_k, top_p, min_p, repeat_penalty, seed},
                .stop = stop,
                .kv_dtype = kv_dtype};
            return model.generate(gattn::python::prompt_ids(model, prompt), args);
          },
          "prompt"_a, nb::kw_only(), "max_tokens"_a = 128, "temperature"_a = 1.0, "top_k"_a = 0,
          "top_p"_a = 1.0, "min_p"_a = 0.0, "repeat_penalty"_a = 1.0, "seed"_a = 0,
          "stop"_a = std::vector<std::string>{}, "kv_dtype"_a = "f32", nb::keep_alive<0, 1>(),
          nb::sig("def generate(self, prompt: str | collections.abc.Sequence[int], *, "
                  "max_tokens: int = 128, temperature: float = 1.0, top_k: int = 0, top_p: "
                  "float = 1.0, min_p: float = 0.0, repeat_penalty: float = 1.0, seed: int = 0, "
                  "stop: collections.abc.Sequence[str] = [], kv_dtype: str = 'f32') -> "
                  "TextIterator"),
          "An iterator over the generated text, piece by piece, as `gattn generate` prints it "
          "(prompt: text, or a list of token ids; temperature 0: greedy). It ends at "
          "max_tokens, the tokenizer's end-of-text token or a stop string; Ctrl-C stops it "
          "between tokens with KeyboardInterrupt.")
      .def(
          "analyze",
          [](const Model& model, nb::handle data, const std::string& tokenizer, int sequences,
             int seq, bool bos, int from_position, double sink_threshold, int batch,
             const std::vector<std::pair<int, int>>& maps, int map_size, nb::handle interventions) {
            gattn::python::AnalyzeArgs args;
            args.data = nb::isinstance<nb::str>(data)
                            ? std::vector<std::string>{nb::cast<std::string>(data)}
                            : nb::cast<std::vector<std::string>>(data);
            args.tokenizer = tokenizer;
            args.options.sequences = sequences;
            args.options.seq_len = seq;
            args.options.bos = bos;
            args.options.from_position = from_position;
            args.options.sink_threshold = sink_threshold;
            args.options.batch = batch;
            args.options.maps = maps;
            args.options.map_size = map_size;
            args.interventions = intervention_specs(interventions);
            return gattn::python::analyze(model, args);
          },
          "data"_a, nb::kw_only(), "tokenizer"_a = "", "sequences"_a = 64, "seq"_a = 256,
          "bos"_a = true, "from_position"_a = 16, "sink_threshold"_a = 0.3, "batch"_a = 8,
          "maps"_a = std::vector<std::pair<int, int>>{}, "map_size"_a = 64,
          "interventions"_a = nb::none(),
          nb::sig("def analyze(self, data: str | collections.abc.Sequence[str], *, tokenizer: "
                  "str = '', sequences: int = 64, seq: int = 256, bos: bool = True, "
                  "from_position: int = 16, sink_threshold: float = 0.3, batch: int = 8, maps: "
                  "collections.abc.Sequence[tuple[int, int]] = [], map_size: int = 64, "
                  "interventions: " GATTN_INTERVENTIONS_TYPE " = None) -> "
                  "gattn.analysis.Analysis"),
          "`gattn analyze` (docs/ANALYSIS.md) as a gattn.analysis.Analysis: first-token "
          "attention per layer and head (F-Attn, Sink^eps), gate scores, massive activations "
          "(M-Act), Gated DeltaNet and router statistics, attention maps, on the first "
          "`sequences` windows of `seq` tokens of data (a token shard, or text files / folders "
          "/ .jsonl read with the model's tokenizer or `tokenizer`). bos=False: plain windows; "
          "maps: (layer, head) attention maps of the first window; interventions: as forward "
          "takes them (the loss is then reported beside the unmodified one). Its .json is what "
          "`gattn analyze --out` writes.");
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
  bind_tokenizer(m);
  bind_generation(m);
  bind_model(m);
  m.def(
      "load",
      [](const std::string& path, const std::string& dtype, const std::string& tokenizer) {
        return std::make_unique<Model>(path, dtype, tokenizer);
      },
      "path"_a, "dtype"_a = "auto", "tokenizer"_a = "",
      "Loads a model: a gattn checkpoint folder, a run folder (its newest checkpoint), a Hugging "
      "Face folder or a GGUF file. dtype: as gattn's --weights-dtype (auto, f32, bf16, q8_0, "
      "q4_0, q4_k_m). tokenizer: a tokenizer file (default: the model's).");
  m.def(
      "train",
      [](const std::string& config, nb::handle callback, const std::string& out, int64_t seed,
         const std::string& gate, const std::string& init_from, bool resume,
         bool allow_config_change, int64_t stop_at_step) {
        return gattn::python::train({.config = config,
                                     .out = out,
                                     .gate = gate,
                                     .init_from = init_from,
                                     .seed = seed,
                                     .resume = resume,
                                     .allow_config_change = allow_config_change,
                                     .stop_at_step = stop_at_step},
                                    callback);
      },
      "config"_a, nb::kw_only(), "callback"_a = nb::none(), "out"_a = "", "seed"_a = -1,
      "gate"_a = "", "init_from"_a = "", "resume"_a = false, "allow_config_change"_a = false,
      "stop_at_step"_a = 0,
      nb::sig("def train(config: str, *, callback: collections.abc.Callable[[dict], bool | None] "
              "| None = None, out: str = '', seed: int = -1, gate: str = '', init_from: str = "
              "'', resume: bool = False, allow_config_change: bool = False, stop_at_step: int = "
              "0) -> dict"),
      "Trains the run config as `gattn train` does (out, seed, gate (JSON), init_from, resume, "
      "allow_config_change, stop_at_step: its flags). callback(record) gets each step's metrics "
      "(step, loss, lr, grad_norm, tokens_per_s, ...); returning False ends the session after "
      "that step with a checkpoint (resume=True goes on). Ctrl-C ends it at the next step with "
      "a checkpoint and raises KeyboardInterrupt. Returns {'steps_done', "
      "'stopped_by_callback', 'summary'}.");
  m.def(
      "read_tokens",
      [](const std::string& path, int64_t count) {
        const gattn::TokenShard shard(path);
        const gattn::ShardInfo& info = shard.info();
        const uint64_t n = count < 0 ? info.tokens : std::min<uint64_t>(count, info.tokens);
        std::vector<int32_t> ids(n);
        shard.read(0, n, ids.data());
        nb::dict out;
        out["ids"] = gattn::python::owned_array(std::move(ids), {size_t(n)});
        out["bos_id"] = info.bos_id;
        out["vocab_size"] = info.vocab_size;
        out["documents"] = info.documents;
        return out;
      },
      "path"_a, "count"_a = -1,
      "The first `count` token ids (all: -1) of a token shard (`gattn data`, `gattn "
      "synthetic`) as int32, with its bos_id, vocab_size and document count.");
  m.def(
      "set_threads", [](int threads) { return gattn::set_num_threads(threads); }, "threads"_a,
      "Sets the threads passes use (at most the cores the process may use); returns the count.");
  m.def("threads", &gattn::num_threads, "The threads passes use.");
  m.attr("SITES") = gattn::python::site_names();
}
