#include "io/gguf_export.h"

#include <cstring>
#include <memory>
#include <vector>

#include "infer/gguf_tokenizer.h"
#include "io/gguf_model.h"
#include "io/gguf_writer.h"
#include "io/hf_export.h"
#include "model/quantize_model.h"
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

void add_config(const Config& c, const std::string& type, GgufWriter& out) {
  out.add_string("general.architecture", "qwen3");
  out.add_string("general.name", "gattn");
  out.add_u32("general.file_type", file_type_of(type));
  QuantMix mix;
  if (quant_mix_of(type, &mix)) out.add_u32("general.quantization_version", 2);
  out.add_u32("qwen3.context_length", uint32_t(c.max_position_embeddings));
  out.add_u32("qwen3.embedding_length", uint32_t(c.hidden_size));
  out.add_u32("qwen3.block_count", uint32_t(c.num_hidden_layers));
  out.add_u32("qwen3.feed_forward_length", uint32_t(c.intermediate_size));
  out.add_u32("qwen3.attention.head_count", uint32_t(c.num_attention_heads));
  out.add_u32("qwen3.attention.head_count_kv", uint32_t(c.num_key_value_heads));
  out.add_u32("qwen3.attention.key_length", uint32_t(c.head_dim));
  out.add_u32("qwen3.attention.value_length", uint32_t(c.head_dim));
  out.add_u32("qwen3.rope.dimension_count", uint32_t(c.head_dim));
  out.add_f32("qwen3.rope.freq_base", float(c.rope_theta));
  out.add_f32("qwen3.attention.layer_norm_rms_epsilon", float(c.rms_norm_eps));
}

std::vector<uint8_t> bf16_bytes(const float* values, int64_t count) {
  std::vector<uint8_t> bytes(size_t(count) * 2);
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t h = bf16_upper_bits(round_to_bf16(values[i]));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

}  // namespace

bool gguf_export_type_known(const std::string& type) {
  QuantMix mix;
  return type == "f32" || type == "bf16" || quant_mix_of(type, &mix);
}

void export_gguf(const Weights& model, const TokenizerSpec& tokenizer, const std::string& type,
                 const std::string& path, LogSink& log) {
  GATTN_ASSERT(model.storage() == WeightDtype::f32, "export_gguf of ",
               weight_dtype_name(model.storage()), " storage");
  if (!gguf_export_type_known(type))
    fail("quantize: type '", type, "'; gattn writes f32, bf16, q8_0, q4_0 and q4_k_m");
  const Config& c = model.config();
  std::string why = hf_export_refusal(c, HfExportFormat::qwen3);
  // The reasons name `gattn export`'s other formats; a GGUF of those (qwen35) is not written yet.
  if (const size_t formats = why.find(" (--format"); formats != std::string::npos)
    why = why.substr(0, formats) + why.substr(why.find(')', formats) + 1);
  if (c.gate.enabled())
    why +=
        " (a gated model's GGUF would be llama.cpp's qwen35 architecture, which gattn does "
        "not write yet)";
  if (why.empty() && c.rope_scaling.type != RopeScaling::Type::none)
    why = "it has RoPE scaling, which gattn's qwen3 GGUF files do not carry";
  if (!why.empty()) fail("quantize to a qwen3 GGUF file: refused because ", why);
  QuantMix mix;
  const std::unique_ptr<Weights> quantized =
      quant_mix_of(type, &mix) ? quantize_model(model, mix) : nullptr;
  GgufWriter out;
  add_config(c, type, out);
  add_gguf_tokenizer(tokenizer, c.vocab_size, out, log);
  std::vector<std::vector<uint8_t>> converted;  // bf16 copies, alive until written
  for (const TensorSpec& spec : model.layout().tensors()) {
    const std::string name = gguf_name_of_hf_tensor(spec.name);
    GATTN_ASSERT(!name.empty(), "no GGUF name for ", spec.name);
    const std::vector<int64_t> shape(spec.shape.rbegin(), spec.shape.rend());  // ggml order
    const float* values = model.at(spec.offset);
    const uint64_t float_bytes = uint64_t(spec.numel) * 4;
    if (spec.elementwise || type == "f32") {
      out.add_tensor(name, GgmlType::f32, shape, values, float_bytes);
    } else if (type == "bf16") {
      converted.push_back(bf16_bytes(values, spec.numel));
      out.add_tensor(name, GgmlType::bf16, shape, converted.back().data(), float_bytes / 2);
    } else {
      const WeightView v = quantized->matrix(spec.offset, shape[1], shape[0]);
      out.add_tensor(name, GgmlType(ggml_type_of(v.dtype)), shape, v.data,
                     uint64_t(v.rows * v.row_bytes()));
    }
  }
  out.write(path);
}

}  // namespace gattn
