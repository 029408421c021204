#include "io/gguf_export.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "infer/gguf_tokenizer.h"
#include "io/gguf_model.h"
#include "io/gguf_writer.h"
#include "io/hf_export.h"
#include "model/quantize_model.h"
#include "model/value_head_order.h"
#include "ops/bf16_bits.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {

namespace {

// llama_ftype of each type (llama.h): ALL_F32, MOSTLY_BF16, MOSTLY_Q8_0, MOSTLY_Q4_0,
// MOSTLY_Q4_K_M.
uint32_t file_type_of(const std::string& type) {
  if (type == "f32") return 0;
  if (type == "bf16") return 32;
  if (type == "q8_0") return 7;
  if (type == "q4_0") return 2;
  return 15;
}

// Why the model has no GGUF file of `arch`, "" if it has one.
std::string refusal(const Config& c, const std::string& arch) {
  const bool qwen35 = arch == "qwen35";
  if (c.has_moe_layers())
    return "it has mixture-of-experts MLPs (llama.cpp's qwen35moe, which gattn does not write)";
  std::string why = hf_export_refusal(c, qwen35 ? HfExportFormat::qwen3_5 : HfExportFormat::qwen3);
  // The reasons name `gattn export`'s other formats, which are no GGUF architectures.
  if (const size_t formats = why.find(" (--format"); formats != std::string::npos)
    why = why.substr(0, formats) + why.substr(why.find(')', formats) + 1);
  if (why.empty() && c.rope_scaling.type != RopeScaling::Type::none)
    why = "it has RoPE scaling, which gattn's GGUF files do not carry";
  return why;
}

// Qwen3.5's M-RoPE sections for a rotary width: with text alone every section sees the same
// position, so any split of its rotary_dim / 2 frequencies is plain RoPE; llama.cpp needs the key.
std::vector<int32_t> rope_sections(int rotary_dim) {
  const int half = rotary_dim / 2, third = half / 3;
  return {half - 2 * third, third, third, 0};
}

void add_config(const Config& c, const std::string& arch, const std::string& type,
                GgufWriter& out) {
  const auto key = [&](const char* k) { return arch + "." + k; };
  out.add_string("general.architecture", arch);
  out.add_string("general.name", "gattn");
  out.add_u32("general.file_type", file_type_of(type));
  QuantMix mix;
  if (quant_mix_of(type, &mix)) out.add_u32("general.quantization_version", 2);
  out.add_u32(key("context_length"), uint32_t(c.max_position_embeddings));
  out.add_u32(key("embedding_length"), uint32_t(c.hidden_size));
  out.add_u32(key("block_count"), uint32_t(c.num_hidden_layers));
  out.add_u32(key("feed_forward_length"), uint32_t(c.intermediate_size));
  out.add_u32(key("attention.head_count"), uint32_t(c.num_attention_heads));
  out.add_u32(key("attention.head_count_kv"), uint32_t(c.num_key_value_heads));
  out.add_u32(key("attention.key_length"), uint32_t(c.head_dim));
  out.add_u32(key("attention.value_length"), uint32_t(c.head_dim));
  out.add_u32(key("rope.dimension_count"), uint32_t(c.rotary_dim()));
  out.add_f32(key("rope.freq_base"), float(c.rope_theta));
  out.add_f32(key("attention.layer_norm_rms_epsilon"), float(c.rms_norm_eps));
  if (arch != "qwen35") return;
  out.add_i32s(key("rope.dimension_sections"), rope_sections(c.rotary_dim()));
  // llama.cpp reads the Gated DeltaNet keys of every qwen35 file (a dense one: Qwen3.5's own).
  out.add_u32(key("ssm.conv_kernel"), uint32_t(c.linear_conv_kernel_dim));
  out.add_u32(key("ssm.state_size"), uint32_t(c.linear_key_head_dim));
  out.add_u32(key("ssm.group_count"), uint32_t(c.linear_num_key_heads));
  out.add_u32(key("ssm.time_step_rank"), uint32_t(c.linear_num_value_heads));
  out.add_u32(key("ssm.inner_size"), uint32_t(c.linear_value_head_dim * c.linear_num_value_heads));
  std::vector<bool> recurrent;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    recurrent.push_back(c.layer(l).attention == AttentionKind::linear);
  out.add_bools(key("attention.recurrent_layers"), recurrent);
}

std::vector<uint8_t> bf16_bytes(const float* values, int64_t count) {
  std::vector<uint8_t> bytes(size_t(count) * 2);
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t h = bf16_upper_bits(round_to_bf16(values[i]));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

// One tensor's bytes in the file's type: the model's own floats or quantized blocks where they
// can be written as they are, else a copy made here (bf16, a qwen35 attn_q, ssm_a).
struct TensorBytes {
  GgmlType type = GgmlType::f32;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  std::vector<uint8_t> owned;

  static TensorBytes copy(GgmlType type, std::vector<uint8_t> bytes) {
    TensorBytes t{.type = type, .data = nullptr, .size = bytes.size(), .owned = std::move(bytes)};
    t.data = t.owned.data();  // a moved vector keeps its buffer
    return t;
  }
};

TensorBytes tensor_bytes(const Weights& model, const Weights* quantized, const TensorSpec& spec,
                         const std::string& type) {
  const float* values = model.at(spec.offset);
  if (spec.elementwise || type == "f32")
    return {.type = GgmlType::f32,
            .data = reinterpret_cast<const uint8_t*>(values),
            .size = uint64_t(spec.numel) * 4,
            .owned = {}};
  if (type == "bf16") return TensorBytes::copy(GgmlType::bf16, bf16_bytes(values, spec.numel));
  const int64_t cols = spec.shape.back(), rows = spec.numel / cols;
  const WeightView v = quantized->matrix(spec.offset, rows, cols);
  return {.type = GgmlType(ggml_type_of(v.dtype)),
          .data = static_cast<const uint8_t*>(v.data),
          .size = uint64_t(rows * v.row_bytes()),
          .owned = {}};
}

// qwen35's attn_q: per head, head_dim query rows then head_dim gate rows.
TensorBytes interleaved_q_gate(const TensorBytes& q, const TensorBytes& gate, int64_t heads) {
  if (q.type != gate.type)
    fail("quantize: q_proj is ", ggml_type_name(uint32_t(q.type)), " and its gate rows ",
         ggml_type_name(uint32_t(gate.type)), "; a qwen35 file holds both in one attn_q");
  const uint64_t block = q.size / uint64_t(heads);  // one head's rows
  std::vector<uint8_t> bytes;
  bytes.reserve(2 * q.size);
  for (int64_t h = 0; h < heads; ++h)
    for (const TensorBytes* part : {&q, &gate})
      bytes.insert(bytes.end(), part->data + h * block, part->data + (h + 1) * block);
  return TensorBytes::copy(q.type, std::move(bytes));
}

// llama.cpp's ssm_a: A = -exp(A_log).
TensorBytes negative_exp(const TensorBytes& a_log, int64_t count) {
  std::vector<uint8_t> bytes(size_t(count) * 4);
  const auto* in = reinterpret_cast<const float*>(a_log.data);
  for (int64_t i = 0; i < count; ++i) {
    const float a = -std::exp(in[i]);
    std::memcpy(bytes.data() + 4 * i, &a, 4);
  }
  return TensorBytes::copy(GgmlType::f32, std::move(bytes));
}

}  // namespace

bool gguf_export_type_known(const std::string& type) {
  QuantMix mix;
  return type == "f32" || type == "bf16" || quant_mix_of(type, &mix);
}

void export_gguf(const Weights& input, const TokenizerSpec* tokenizer, const std::string& type,
                 const std::string& path, LogSink& log) {
  GATTN_ASSERT(input.storage() == WeightDtype::f32, "export_gguf of ",
               weight_dtype_name(input.storage()), " storage");
  if (!gguf_export_type_known(type))
    fail("quantize: type '", type, "'; gattn writes f32, bf16, q8_0, q4_0 and q4_k_m");
  const Config& c = input.config();
  const std::string arch = c.gate.enabled() || c.has_linear_layers() ? "qwen35" : "qwen3";
  if (const std::string why = refusal(c, arch); !why.empty())
    fail("quantize to a ", arch, " GGUF file: refused because ", why);
  // qwen35 files keep the Gated DeltaNet's V heads tiled, as llama.cpp's converter writes them.
  const std::unique_ptr<Weights> tiled =
      arch == "qwen35" ? reorder_value_heads(input, true) : nullptr;
  const Weights& model = tiled ? *tiled : input;
  QuantMix mix;
  const std::unique_ptr<Weights> quantized =
      quant_mix_of(type, &mix) ? quantize_model(model, mix) : nullptr;
  if (arch == "qwen35" && !c.has_linear_layers())
    log.note(
        "quantize: a qwen35 file without Gated DeltaNet layers; gattn reads it, but "
        "llama.cpp (llama-cpp-python 0.3.36) aborts on qwen35 files without recurrent "
        "layers (GGML_ASSERT(buffer) in its hybrid memory)");
  GgufWriter out;
  add_config(c, arch, type, out);
  if (tokenizer) add_gguf_tokenizer(*tokenizer, c.vocab_size, out, log);
  std::deque<TensorBytes> written;  // alive until written
  const ParamLayout& layout = model.layout();
  for (const TensorSpec& spec : layout.tensors()) {
    if (spec.name.ends_with("sdpa_gate.weight")) continue;  // inside attn_q
    const std::string name = gguf_name_of_hf_tensor(spec.name, arch);
    GATTN_ASSERT(!name.empty(), "no GGUF name for ", spec.name);
    std::vector<int64_t> shape = spec.shape;
    TensorBytes t = tensor_bytes(model, quantized.get(), spec, type);
    if (arch == "qwen35" && spec.name.ends_with("self_attn.q_proj.weight")) {
      const TensorSpec* gate =
          layout.find(spec.name.substr(0, spec.name.size() - 13) + "sdpa_gate.weight");
      GATTN_ASSERT(gate, "no gate beside ", spec.name);
      t = interleaved_q_gate(t, tensor_bytes(model, quantized.get(), *gate, type),
                             c.num_attention_heads);
      shape[0] += gate->shape[0];
    }
    if (spec.name.ends_with("linear_attn.A_log")) t = negative_exp(t, spec.numel);
    if (shape.size() == 3 && shape[1] == 1) shape.erase(shape.begin() + 1);  // the conv kernel
    written.push_back(std::move(t));
    out.add_tensor(name, written.back().type, {shape.rbegin(), shape.rend()}, written.back().data,
                   written.back().size);
  }
  out.write(path);
}

}  // namespace gattn
