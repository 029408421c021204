#include "io/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

using NamePair = std::pair<const char*, const char*>;

// GGUF per-layer name (after "blk.<l>.") -> Hugging Face name (after "model.layers.<l>."): qwen3's,
// then the names only qwen35 has (its norm before the MLP, its Gated DeltaNet layers).
const NamePair kLayerNames[] = {
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
const NamePair kQwen35Names[] = {
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"},
    {"attn_gate.weight", "linear_attn.in_proj_z.weight"},
    {"ssm_beta.weight", "linear_attn.in_proj_b.weight"},
    {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"},
    {"ssm_out.weight", "linear_attn.out_proj.weight"},
    {"ssm_norm.weight", "linear_attn.norm.weight"},
    {"ssm_conv1d.weight", "linear_attn.conv1d.weight"},
    {"ssm_dt.bias", "linear_attn.dt_bias"},
    {"ssm_a", "linear_attn.A_log"},
};

// The per-layer names of an architecture (qwen3's ffn_norm is qwen35's post_attention_norm).
std::vector<NamePair> layer_names(const std::string& arch) {
  std::vector<NamePair> names(std::begin(kLayerNames), std::end(kLayerNames));
  if (arch == "qwen35") {
    std::erase_if(names,
                  [](const NamePair& n) { return n.first == std::string("ffn_norm.weight"); });
    names.insert(names.end(), std::begin(kQwen35Names), std::end(kQwen35Names));
  }
  return names;
}

bool readable_type(uint32_t type) {
  WeightDtype dtype;
  return type == uint32_t(GgmlType::f16) || weight_dtype_of_ggml(type, &dtype);
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

std::string hf_name_of_gguf_tensor(const std::string& name, const std::string& arch) {
  if (name == "token_embd.weight") return "model.embed_tokens.weight";
  if (name == "output_norm.weight") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  static const std::regex layer(R"(blk\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, layer)) return "";
  for (const auto& [ours, theirs] : layer_names(arch))
    if (m[2] == ours) return "model.layers." + m[1].str() + "." + theirs;
  return "";
}

std::string gguf_name_of_hf_tensor(const std::string& name, const std::string& arch) {
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") return "output.weight";
  static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, layer)) return "";
  for (const auto& [ours, theirs] : layer_names(arch))
    if (m[2] == theirs) return "blk." + m[1].str() + "." + ours;
  return "";
}

namespace {

// Which layers are Gated DeltaNet (linear_attention): qwen35's attention.recurrent_layers, else
// llama.cpp's rule from full_attention_interval (layer l recurrent unless (l + 1) % interval == 0).
std::vector<std::string> qwen35_layer_types(const GgufReader& g, int64_t layers) {
  std::vector<std::string> types;
  if (g.has("qwen35.attention.recurrent_layers")) {
    const std::vector<bool> recurrent = g.get_bools("qwen35.attention.recurrent_layers");
    if (int64_t(recurrent.size()) < layers)
      fail(g.path(), ": metadata 'qwen35.attention.recurrent_layers' has ", recurrent.size(),
           " entries for ", layers, " layers");
    for (int64_t l = 0; l < layers; ++l)
      types.push_back(recurrent[size_t(l)] ? "linear_attention" : "full_attention");
    return types;
  }
  const int64_t interval =
      g.has("qwen35.full_attention_interval") ? g.get_int("qwen35.full_attention_interval") : 4;
  if (interval < 1) fail(g.path(), ": metadata 'qwen35.full_attention_interval' is ", interval);
  for (int64_t l = 0; l < layers; ++l)
    types.push_back((l + 1) % interval ? "linear_attention" : "full_attention");
  return types;
}

// qwen35's Gated DeltaNet geometry (llama.cpp's ssm.* keys: state_size = key head size,
// group_count = key heads, time_step_rank = value heads, inner_size = value heads x value head
// size), its V heads in the converter's tiled order (the grouped one where there is one per key
// head).
void read_qwen35_delta_net(const GgufReader& g, nlohmann::json& c) {
  const int64_t value_heads = g.get_int("qwen35.ssm.time_step_rank");
  const int64_t inner = g.get_int("qwen35.ssm.inner_size");
  if (value_heads <= 0 || inner % value_heads != 0)
    fail(g.path(), ": metadata 'qwen35.ssm.inner_size' (", inner,
         ") is not a multiple of 'qwen35.ssm.time_step_rank' (", value_heads, ")");
  c["linear_num_key_heads"] = g.get_int("qwen35.ssm.group_count");
  c["linear_num_value_heads"] = value_heads;
  c["linear_key_head_dim"] = g.get_int("qwen35.ssm.state_size");
  c["linear_value_head_dim"] = inner / value_heads;
  c["linear_conv_kernel_dim"] = g.get_int("qwen35.ssm.conv_kernel");
  c["linear_value_heads_tiled"] = value_heads != g.get_int("qwen35.ssm.group_count");
}

}  // namespace

Config gguf_config(const GgufReader& g) {
  const std::string arch = g.get_string("general.architecture");
  if (arch != "qwen3" && arch != "qwen35")
    fail(g.path(), ": architecture '", arch,
         "' (metadata general.architecture); gattn reads GGUF files of architectures qwen3 and "
         "qwen35");
  const auto key = [&](const std::string& k) { return arch + "." + k; };
  if (g.has(key("expert_count")) && g.get_int(key("expert_count")) > 0)
    fail(g.path(), ": metadata '", key("expert_count"),
         "': a mixture-of-experts model; gattn reads dense qwen3 and qwen35 GGUF files");
  const GgufTensor& embed = g.get("token_embd.weight");
  if (embed.shape.size() != 2)
    fail(g.path(), ": tensor 'token_embd.weight' has ", embed.shape.size(),
         " dimensions, expected 2 (hidden size, vocabulary)");
  nlohmann::json c;
  c["vocab_size"] = embed.shape[1];
  c["hidden_size"] = g.get_int(key("embedding_length"));
  // Multi-token-prediction blocks (nextn) follow the model's own layers; they are not read.
  const int64_t nextn =
      g.has(key("nextn_predict_layers")) ? g.get_int(key("nextn_predict_layers")) : 0;
  const int64_t layers = g.get_int(key("block_count")) - nextn;
  // Each layer has tensors of its own: a count beyond the file's is a lie, not a layout to build.
  if (layers < 1 || layers > int64_t(g.tensors().size()))
    fail(g.path(), ": metadata '", key("block_count"), "' gives ", layers, " layers, but the file ",
         "holds ", g.tensors().size(), " tensors");
  c["num_hidden_layers"] = layers;
  c["num_attention_heads"] = g.get_int(key("attention.head_count"));  // checked below
  c["num_key_value_heads"] = g.has(key("attention.head_count_kv"))
                                 ? g.get_int(key("attention.head_count_kv"))
                                 : g.get_int(key("attention.head_count"));
  const int64_t heads = g.get_int(key("attention.head_count"));
  if (heads <= 0) fail(g.path(), ": metadata '", key("attention.head_count"), "' is ", heads);
  const int64_t head_dim = g.has(key("attention.key_length"))
                               ? g.get_int(key("attention.key_length"))
                               : g.get_int(key("embedding_length")) / heads;
  c["head_dim"] = head_dim;
  if (g.has(key("attention.value_length")) && g.get_int(key("attention.value_length")) != head_dim)
    fail(g.path(), ": metadata '", key("attention.value_length"), "' differs from '",
         key("attention.key_length"), "'; gattn's attention has one head size");
  if (g.has(key("rope.dimension_count"))) {
    const int64_t rotary = g.get_int(key("rope.dimension_count"));
    if (rotary <= 0 || rotary > head_dim || rotary % 2)
      fail(g.path(), ": metadata '", key("rope.dimension_count"), "' is ", rotary,
           "; expected an even count of at most the head size ", head_dim);
    c["partial_rotary_factor"] = double(rotary) / double(head_dim);
  }
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
  c["gate"] = {{"position", arch == "qwen35" ? "sdpa" : "none"}};  // Qwen3.5's: G1
  if (arch == "qwen35") {
    const std::vector<std::string> types = qwen35_layer_types(g, layers);
    c["layer_types"] = types;
    if (std::find(types.begin(), types.end(), "linear_attention") != types.end())
      read_qwen35_delta_net(g, c);
  }
  return config_from_json(c, g.path());
}

namespace {

// How a file's tensor becomes the layout's: as stored; qwen35's attn_q (per head, d query rows
// then d gate rows) split into q_proj and sdpa_gate; qwen35's ssm_a (A = -exp(A_log)) back to
// A_log.
enum class Transform { copy, split_q_gate, a_to_a_log };

struct TensorPlan {
  const GgufTensor* tensor = nullptr;
  const TensorSpec* spec = nullptr;
  const TensorSpec* gate = nullptr;  // split_q_gate: sdpa_gate.weight
  Transform transform = Transform::copy;
  int64_t head_dim = 0;  // split_q_gate

  // The file's row of row r of part `gate_part` (split_q_gate), else r.
  int64_t source_row(int64_t r, bool gate_part) const {
    if (transform != Transform::split_q_gate) return r;
    return r / head_dim * 2 * head_dim + (gate_part ? head_dim : 0) + r % head_dim;
  }
};

// The file's ggml shape expected for the plan (the conv kernel's middle 1 squeezed, as
// llama.cpp's converter stores it; q_proj with its gate rows).
std::vector<int64_t> expected_shape(const TensorPlan& p) {
  std::vector<int64_t> shape = p.spec->shape;
  if (p.transform == Transform::split_q_gate) shape[0] += p.gate->shape[0];
  if (shape.size() == 3 && shape[1] == 1) shape.erase(shape.begin() + 1);
  return {shape.rbegin(), shape.rend()};  // ggml order
}

// The parts the plan fills: the tensor, and for split_q_gate the gate.
std::vector<std::pair<const TensorSpec*, bool>> parts(const TensorPlan& p) {
  if (p.transform != Transform::split_q_gate) return {{p.spec, false}};
  return {{p.spec, false}, {p.gate, true}};
}

// A matrix as the file stores it, for a qwen35 attn_q each of its parts: block formats and bf16
// read in place from the mapped file (the reader kept alive by the weights) or, for a part, its
// whole rows copied (each row's blocks stand alone: the products read the very blocks the file
// holds); f32 and f16 as an aligned f32 copy (exact), as is anything the file places at an
// address its type may not be read from.
void map_tensor(const TensorPlan& p, const std::shared_ptr<const GgufReader>& file, Weights& w) {
  const GgufTensor& t = *p.tensor;
  const int64_t cols = t.shape[0];
  WeightDtype dtype = WeightDtype::f32;
  if (t.type != uint32_t(GgmlType::f16)) weight_dtype_of_ggml(t.type, &dtype);
  const bool in_place = reinterpret_cast<uintptr_t>(t.data) % 2 == 0;
  if (dtype != WeightDtype::f32 && in_place && p.transform == Transform::copy) {
    w.map_matrix(p.spec->offset, t.rows, cols, dtype, t.data, file);
    return;
  }
  const int64_t row_bytes = dtype == WeightDtype::f32 ? cols * 4 : t.row_bytes;
  for (const auto& [part, gate_part] : parts(p)) {
    const int64_t rows = part->shape[0];
    auto copy = std::make_shared<AlignedFloats>(size_t((rows * row_bytes + 3) / 4));
    auto* bytes = reinterpret_cast<uint8_t*>(copy->data());
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* source = t.data + p.source_row(r, gate_part) * t.row_bytes;
      if (dtype == WeightDtype::f32)
        ggml::dequantize_row(t.type, source, cols, copy->data() + r * cols);
      else
        std::memcpy(bytes + r * row_bytes, source, size_t(row_bytes));
    }
    w.map_matrix(part->offset, rows, cols, dtype, copy->data(), copy);
  }
}

// The tensor's values, converted into `w` in bounded chunks of rows.
void store_tensor(const TensorPlan& p, Weights& w, const std::string& path) {
  const GgufTensor& t = *p.tensor;
  const int64_t cols = t.shape[0];
  for (const auto& [part, gate_part] : parts(p)) {
    const int64_t rows = part->numel / cols;
    const int64_t per_chunk = std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(cols, 1));
    std::vector<float> chunk(size_t(std::min(rows, per_chunk) * cols));
    for (int64_t r = 0; r < rows; r += per_chunk) {
      const int64_t n = std::min(per_chunk, rows - r);
      for (int64_t i = 0; i < n; ++i)
        ggml::dequantize_row(t.type, t.data + p.source_row(r + i, gate_part) * t.row_bytes, cols,
                             chunk.data() + i * cols);
      if (p.transform == Transform::a_to_a_log)
        for (float& a : chunk) {
          if (!(a < 0) || !std::isfinite(a))
            fail(path, ": tensor '", t.name, "' holds ", a, "; A = -exp(A_log) must be negative");
          a = std::log(-a);
        }
      w.store(part->offset + r * cols, chunk.data(), n * cols);
    }
  }
}

}  // namespace

std::unique_ptr<Weights> load_gguf_model(const std::string& path, LogSink& log,
                                         WeightDtype storage) {
  const auto file = std::make_shared<const GgufReader>(path);
  const GgufReader& g = *file;
  const Config config = gguf_config(g);
  const std::string arch = g.get_string("general.architecture");
  const ParamLayout layout(config);
  // Every tensor is checked against the layout before the parameters are allocated.
  std::vector<TensorPlan> plan;
  std::unordered_set<std::string> seen;
  for (const GgufTensor& t : g.tensors()) {
    const std::string name = hf_name_of_gguf_tensor(t.name, arch);
    const TensorSpec* spec = name.empty() ? nullptr : layout.find(name);
    if (!spec) {
      log.note(path + ": tensor '" + t.name + "' is not part of the model; ignored");
      continue;
    }
    if (!readable_type(t.type))
      fail(path, ": tensor '", t.name, "' has type ", ggml_type_name(t.type),
           "; gattn reads GGUF tensors of types f32, f16, bf16, q8_0, q4_0, q4_K and q6_K");
    TensorPlan p{.tensor = &t, .spec = spec};
    if (arch == "qwen35" && name.ends_with("self_attn.q_proj.weight")) {
      p.transform = Transform::split_q_gate;
      p.gate = layout.find(name.substr(0, name.size() - 13) + "sdpa_gate.weight");
      GATTN_ASSERT(p.gate, "the layout has no gate for ", name);
      p.head_dim = config.head_dim;
      seen.insert(p.gate->name);
    }
    if (name.ends_with("linear_attn.A_log")) p.transform = Transform::a_to_a_log;
    const std::vector<int64_t> want = expected_shape(p);
    if (t.shape != want)
      fail(path, ": tensor '", t.name, "' has shape ", shape_string(t.shape),
           " (ggml order), expected ", shape_string(want), " for ", name,
           " of the metadata's config");
    if (!seen.insert(name).second) fail(path, ": tensor '", t.name, "' appears twice");
    plan.push_back(p);
  }
  for (const TensorSpec& spec : layout.tensors())
    if (!seen.count(spec.name) && !(config.tie_word_embeddings && spec.name == "lm_head.weight"))
      fail(path, ": the model needs tensor ", spec.name, ", which the file does not have");
  auto weights = std::make_unique<Weights>(config, storage);
  for (const TensorPlan& p : plan) {
    if (storage == WeightDtype::bf16 && !p.spec->elementwise)
      map_tensor(p, file, *weights);
    else
      store_tensor(p, *weights, path);
  }
  if (storage == WeightDtype::bf16)
    log.note(path + ": matrices as the file stores them (" + weights->mapped_dtypes() + ")");
  return weights;
}

}  // namespace gattn
