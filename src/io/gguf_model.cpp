#include "io/gguf_model.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <unordered_set>

#include "io/safetensors.h"
#include "model/layout.h"
#include "ops/ggml_blocks.h"
#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

namespace {

// GGUF per-layer name (after "blk.<l>.") -> Hugging Face name (after "model.layers.<l>.").
const std::pair<const char*, const char*> kLayerNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

bool readable_type(uint32_t type) {
  WeightDtype dtype;
  return type == uint32_t(GgmlType::f16) || weight_dtype_of_ggml(type, &dtype);
}

// A matrix as the file stores it: block formats and bf16 read in place (the reader, which maps
// the file, kept alive by the weights); f32 and f16 as an aligned f32 copy (exact), as is
// anything the file places at an address its type may not be read from.
void map_tensor(const GgufTensor& t, const std::shared_ptr<const GgufReader>& file, Weights& w,
                int64_t offset) {
  const int64_t cols = t.shape[0];
  WeightDtype dtype = WeightDtype::f32;
  if (t.type != uint32_t(GgmlType::f16)) weight_dtype_of_ggml(t.type, &dtype);
  if (dtype != WeightDtype::f32 && reinterpret_cast<uintptr_t>(t.data) % 2 == 0) {
    w.map_matrix(offset, t.rows, cols, dtype, t.data, file);
    return;
  }
  auto copy = std::make_shared<AlignedFloats>(size_t(t.numel));
  if (dtype == WeightDtype::f32 || t.type == uint32_t(GgmlType::f16)) {
    for (int64_t r = 0; r < t.rows; ++r)
      ggml::dequantize_row(t.type, t.data + r * t.row_bytes, cols, copy->data() + r * cols);
    w.map_matrix(offset, t.rows, cols, WeightDtype::f32, copy->data(), copy);
    return;
  }
  std::memcpy(copy->data(), t.data, t.bytes);  // a block format at an odd address
  w.map_matrix(offset, t.rows, cols, dtype, copy->data(), copy);
}

// The tensor's values, converted row by row into `w` at `offset` (bounded chunks of floats).
void store_tensor(const GgufTensor& t, Weights& w, int64_t offset) {
  const int64_t cols = t.shape[0];
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(cols, 1));
  std::vector<float> chunk(size_t(std::min(t.rows, rows_per_chunk) * cols));
  for (int64_t r = 0; r < t.rows; r += rows_per_chunk) {
    const int64_t n = std::min(rows_per_chunk, t.rows - r);
    for (int64_t i = 0; i < n; ++i)
      ggml::dequantize_row(t.type, t.data + (r + i) * t.row_bytes, cols, chunk.data() + i * cols);
    w.store(offset + r * cols, chunk.data(), n * cols);
  }
}

// A float32 metadata value as the shortest decimal that rounds to it (1e-6, not the double
// nearest 1e-6f): what the Hugging Face config the file was converted from said.
double shortest_float(double value) {
  for (int digits = 1; digits < 10; ++digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    const double parsed = std::strtod(text, nullptr);
    if (float(parsed) == float(value)) return parsed;
  }
  return value;
}

}  // namespace

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[4] = {};
  in.read(head, 4);
  return looks_like_gguf(std::string_view(head, size_t(in.gcount())));
}

std::string hf_name_of_gguf_tensor(const std::string& name) {
  if (name == "token_embd.weight") return "model.embed_tokens.weight";
  if (name == "output_norm.weight") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  static const std::regex layer(R"(blk\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, layer)) return "";
  for (const auto& [ours, theirs] : kLayerNames)
    if (m[2] == ours) return "model.layers." + m[1].str() + "." + theirs;
  return "";
}

std::string gguf_name_of_hf_tensor(const std::string& name) {
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") return "output.weight";
  static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, layer)) return "";
  for (const auto& [ours, theirs] : kLayerNames)
    if (m[2] == theirs) return "blk." + m[1].str() + "." + ours;
  return "";
}

Config gguf_config(const GgufReader& g) {
  const std::string arch = g.get_string("general.architecture");
  if (arch != "qwen3")
    fail(g.path(), ": architecture '", arch,
         "' (metadata general.architecture); gattn reads GGUF files of architecture qwen3");
  const auto key = [&](const std::string& k) { return arch + "." + k; };
  const GgufTensor& embed = g.get("token_embd.weight");
  if (embed.shape.size() != 2)
    fail(g.path(), ": tensor 'token_embd.weight' has ", embed.shape.size(),
         " dimensions, expected 2 (hidden size, vocabulary)");
  nlohmann::json c;
  c["vocab_size"] = embed.shape[1];
  c["hidden_size"] = g.get_int(key("embedding_length"));
  c["num_hidden_layers"] = g.get_int(key("block_count"));
  c["num_attention_heads"] = g.get_int(key("attention.head_count"));  // checked below
  c["num_key_value_heads"] = g.has(key("attention.head_count_kv"))
                                 ? g.get_int(key("attention.head_count_kv"))
                                 : g.get_int(key("attention.head_count"));
  const int64_t heads = g.get_int(key("attention.head_count"));
  if (heads <= 0) fail(g.path(), ": metadata '", key("attention.head_count"), "' is ", heads);
  c["head_dim"] = g.has(key("attention.key_length")) ? g.get_int(key("attention.key_length"))
                                                     : g.get_int(key("embedding_length")) / heads;
  if (g.has(key("attention.value_length")) &&
      g.get_int(key("attention.value_length")) != c["head_dim"].get<int64_t>())
    fail(g.path(), ": metadata '", key("attention.value_length"), "' differs from '",
         key("attention.key_length"), "'; gattn's attention has one head size");
  c["intermediate_size"] = g.get_int(key("feed_forward_length"));
  if (g.has(key("rope.freq_base")))
    c["rope_theta"] = shortest_float(g.get_float(key("rope.freq_base")));
  c["rms_norm_eps"] = shortest_float(g.get_float(key("attention.layer_norm_rms_epsilon")));
  // The RoPE table holds every position: a context beyond any model's is a lie, not a table of
  // gigabytes.
  const int64_t context = g.get_int(key("context_length"));
  if (context > (int64_t(1) << 22))
    fail(g.path(), ": metadata '", key("context_length"), "' is ", context,
         "; gattn reads contexts of at most 4,194,304 positions");
  c["max_position_embeddings"] = context;
  c["tie_word_embeddings"] = g.find("output.weight") == nullptr;
  c["use_qk_norm"] = true;
  c["gate"] = {{"position", "none"}};
  return config_from_json(c, g.path());
}

std::unique_ptr<Weights> load_gguf_model(const std::string& path, LogSink& log,
                                         WeightDtype storage) {
  const auto file = std::make_shared<const GgufReader>(path);
  const GgufReader& g = *file;
  const Config config = gguf_config(g);
  const ParamLayout layout(config);
  // Every tensor is checked against the layout before the parameters are allocated.
  std::vector<std::pair<const GgufTensor*, const TensorSpec*>> plan;
  std::unordered_set<std::string> seen;
  for (const GgufTensor& t : g.tensors()) {
    const std::string name = hf_name_of_gguf_tensor(t.name);
    const TensorSpec* spec = name.empty() ? nullptr : layout.find(name);
    if (!spec) {
      log.note(path + ": tensor '" + t.name + "' is not part of the model; ignored");
      continue;
    }
    if (!readable_type(t.type))
      fail(path, ": tensor '", t.name, "' has type ", ggml_type_name(t.type),
           "; gattn reads GGUF tensors of types f32, f16, bf16, q8_0, q4_0, q4_K and q6_K");
    std::vector<int64_t> want(spec->shape.rbegin(), spec->shape.rend());  // ggml order
    if (t.shape != want)
      fail(path, ": tensor '", t.name, "' has shape ", shape_string(t.shape),
           " (ggml order), expected ", shape_string(want), " for ", name,
           " of the metadata's config");
    seen.insert(name);
    plan.emplace_back(&t, spec);
  }
  for (const TensorSpec& spec : layout.tensors())
    if (!seen.count(spec.name) && !(config.tie_word_embeddings && spec.name == "lm_head.weight"))
      fail(path, ": the model needs tensor ", spec.name, ", which the file does not have");
  auto weights = std::make_unique<Weights>(config, storage);
  for (const auto& [t, spec] : plan) {
    if (storage == WeightDtype::bf16 && !spec->elementwise)
      map_tensor(*t, file, *weights, spec->offset);
    else
      store_tensor(*t, *weights, spec->offset);
  }
  if (storage == WeightDtype::bf16)
    log.note(path + ": matrices as the file stores them (" + weights->mapped_dtypes() + ")");
  return weights;
}

}  // namespace gattn
