#include "model/quantize_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/quantize_blocks.h"
#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The tensor classes llama.cpp's Q4_K_M gives Q6_K where use_more_bits picks them: attn_v-like
// (attn_v, and a Gated DeltaNet's fused attn_qkv, counted together) and ffn_down.
const std::vector<std::vector<std::string>> kMoreBitsClasses = {
    {"self_attn.v_proj.weight", "linear_attn.in_proj_qkv.weight"}, {"mlp.down_proj.weight"}};

bool in_class(const std::string& name, const std::vector<std::string>& tails) {
  return std::any_of(tails.begin(), tails.end(),
                     [&](const std::string& t) { return ends_with(name, t); });
}

// Tensor `spec`'s position among the layout's tensors of a class (llama.cpp counts them in the
// file's order; gattn's is layer order), and their number.
std::pair<int, int> position_among(const ParamLayout& layout, const TensorSpec& spec,
                                   const std::vector<std::string>& tails) {
  int i = -1, n = 0;
  for (const TensorSpec& t : layout.tensors()) {
    if (!in_class(t.name, tails)) continue;
    if (&t == &spec) i = n;
    ++n;
  }
  return {i, n};
}

WeightDtype default_dtype(QuantMix mix) {
  switch (mix) {
    case QuantMix::q8_0:
      return WeightDtype::q8_0;
    case QuantMix::q4_0:
      return WeightDtype::q4_0;
    case QuantMix::q4_k_m:
      return WeightDtype::q4_k;
  }
  return WeightDtype::q8_0;
}

// llama.cpp's choice before its fallback for rows that are not whole blocks.
WeightDtype chosen_dtype(QuantMix mix, const ParamLayout& layout, const TensorSpec& spec) {
  const WeightDtype base = default_dtype(mix);
  const bool tied = layout.find("lm_head.weight") == nullptr;
  if (spec.name == "lm_head.weight" || (tied && spec.name == "model.embed_tokens.weight")) {
    if (spec.shape.back() % weight_block_values(base) != 0) return WeightDtype::q8_0;
    return base == WeightDtype::q8_0 ? WeightDtype::q8_0 : WeightDtype::q6_k;
  }
  if (mix != QuantMix::q4_k_m) return base;
  for (const std::vector<std::string>& tails : kMoreBitsClasses) {
    if (!in_class(spec.name, tails)) continue;
    const auto [i, n] = position_among(layout, spec, tails);
    return use_more_bits(i, n) ? WeightDtype::q6_k : base;
  }
  return base;
}

}  // namespace

bool quant_mix_of(const std::string& name, QuantMix* mix) {
  for (QuantMix m : {QuantMix::q8_0, QuantMix::q4_0, QuantMix::q4_k_m})
    if (name == quant_mix_name(m)) {
      *mix = m;
      return true;
    }
  return false;
}

const char* quant_mix_name(QuantMix mix) {
  switch (mix) {
    case QuantMix::q8_0:
      return "q8_0";
    case QuantMix::q4_0:
      return "q4_0";
    case QuantMix::q4_k_m:
      return "q4_k_m";
  }
  return "?";
}

WeightDtype mixed_dtype(QuantMix mix, const ParamLayout& layout, const TensorSpec& spec) {
  if (spec.elementwise || spec.shape.size() < 2) return WeightDtype::f32;
  const WeightDtype dtype = chosen_dtype(mix, layout, spec);
  const int64_t cols = spec.shape.back();
  if (cols % weight_block_values(dtype) == 0) return dtype;
  if (dtype == WeightDtype::q6_k && cols % 32 == 0) return WeightDtype::q8_0;  // as llama.cpp
  fail(spec.name, ": rows of ", cols, " values are not whole ", weight_dtype_name(dtype),
       " blocks of ", weight_block_values(dtype), "; llama.cpp would store it as ",
       dtype == WeightDtype::q4_k ? "q5_0" : "f16", ", which gattn does not read");
}

std::unique_ptr<Weights> quantize_model(const Weights& model, QuantMix mix) {
  GATTN_ASSERT(model.storage() == WeightDtype::f32, "quantize_model of ",
               weight_dtype_name(model.storage()), " storage");
  const ParamLayout& layout = model.layout();
  struct Matrix {
    const TensorSpec* spec;
    WeightDtype dtype;
    int64_t rows, cols, at;
  };
  auto out = std::make_unique<Weights>(model.config(), WeightDtype::bf16);
  std::vector<Matrix> matrices;
  int64_t bytes = 0;
  for (const TensorSpec& spec : layout.tensors()) {
    const WeightDtype dtype = mixed_dtype(mix, layout, spec);
    if (dtype == WeightDtype::f32) {  // elementwise: stored as floats
      out->store(spec.offset, model.at(spec.offset), spec.numel);
      continue;
    }
    const float* values = model.at(spec.offset);
    for (int64_t i = 0; i < spec.numel; ++i)
      if (!std::isfinite(values[i]))
        fail(spec.name, ": value ", i, " is ", values[i], "; only finite weights are quantized");
    const int64_t cols = spec.shape.back(), rows = spec.numel / cols;
    matrices.push_back({&spec, dtype, rows, cols, bytes});
    bytes += (rows * weight_row_bytes(dtype, cols) + 63) / 64 * 64;
  }
  auto blocks = std::make_shared<std::vector<uint8_t, AlignedAllocator<uint8_t>>>(size_t(bytes));
  for (const Matrix& m : matrices) {
    uint8_t* data = blocks->data() + m.at;
    const float* values = model.at(m.spec->offset);
    const int64_t row_bytes = weight_row_bytes(m.dtype, m.cols);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m.rows; ++r)
      quantize_block_row(m.dtype, values + r * m.cols, m.cols, data + r * row_bytes);
    out->map_matrix(m.spec->offset, m.rows, m.cols, m.dtype, data, blocks);
  }
  return out;
}

void round_weights_to_int8_rows(Weights& model) {
  GATTN_ASSERT(model.storage() == WeightDtype::f32, "round_weights_to_int8_rows of ",
               weight_dtype_name(model.storage()), " storage");
  for (const TensorSpec& spec : model.layout().tensors()) {
    if (spec.elementwise || spec.shape.size() < 2) continue;
    const int64_t cols = spec.shape.back(), rows = spec.numel / cols;
    std::vector<float> values(model.at(spec.offset), model.at(spec.offset) + spec.numel);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      round_to_int8_steps(values.data() + r * cols, cols, values.data() + r * cols);
    model.store(spec.offset, values.data(), spec.numel);
  }
}

}  // namespace gattn
