// gattn's quantizer (ops/quantize_blocks.h, model/quantize_model.h) against llama.cpp's own: the
// float values of tests/fixtures/gguf/qwen3_k256_q8_0.gguf quantized in memory to Q8_0, Q4_0 and
// Q4_K_M give, tensor by tensor, the type llama.cpp's llama_model_quantize chose and the same
// bytes (XXH3-64 of each tensor: quantizer_expected.json, tools/reference/
// make_quantizer_fixtures.py). Also: the blocks dequantize back near the values, and bad input is
// refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "io/gguf_model.h"
#include "model/pass.h"
#include "model/quantize_model.h"
#include "ops/ggml_blocks.h"
#include "ops/quantize_blocks.h"
#include "util/checksum.h"
#include "util/error.h"

namespace gattn {
namespace {

const std::string kDir = std::string(GATTN_FIXTURE_DIR) + "/gguf/";

nlohmann::json expected_types() {
  std::ifstream in(kDir + "quantizer_expected.json");
  return nlohmann::json::parse(in);
}

// The bytes of tensor `spec` as quantize_model stored them: its blocks, or its floats.
std::pair<std::string, uint64_t> stored(const Weights& w, const TensorSpec& spec) {
  if (spec.elementwise) return {"f32", checksum64(w.at(spec.offset), size_t(spec.numel) * 4)};
  const WeightView v = w.matrix(spec.offset, spec.numel / spec.shape.back(), spec.shape.back());
  return {weight_dtype_name(v.dtype), checksum64(v.data, size_t(v.rows * v.row_bytes()))};
}

TEST(QuantizeModel, EveryTensorAsLlamaCppQuantizesIt) {
  const nlohmann::json expected = expected_types();
  const auto model = load_gguf_model(kDir + expected["source"].get<std::string>(), discard_log(),
                                     WeightDtype::f32);
  for (const auto& [mix_name, tensors] : expected["types"].items()) {
    QuantMix mix;
    ASSERT_TRUE(quant_mix_of(mix_name, &mix)) << mix_name;
    const auto quantized = quantize_model(*model, mix);
    int compared = 0;
    for (const auto& [gguf_name, want] : tensors.items()) {
      const TensorSpec* spec = quantized->layout().find(hf_name_of_gguf_tensor(gguf_name));
      ASSERT_NE(spec, nullptr) << gguf_name;
      const auto [type, checksum] = stored(*quantized, *spec);
      EXPECT_EQ(type, want["type"].get<std::string>()) << mix_name << " " << gguf_name;
      EXPECT_EQ(checksum_hex(checksum), want["xxh3"].get<std::string>())
          << mix_name << " " << gguf_name << " (" << type << ")";
      ++compared;
    }
    EXPECT_EQ(compared, int(quantized->layout().tensors().size())) << mix_name;
  }
}

// Random rows of every format dequantize back within the format's step: the largest error of a
// value is at most half a step of its block (plus the fp16 rounding of the scales), which the
// bound below holds with room for the K-quants' fitted (not max-based) scales.
TEST(QuantizeBlocks, RowsDequantizeBackNearTheValues) {
  const int64_t cols = 512;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(cols), back(cols);
  for (float& v : x) v = normal(rng);
  x[7] = 0.3f;  // an outlier, as trained models have
  const struct {
    WeightDtype dtype;
    double bound;  // relative L2
  } cases[] = {{WeightDtype::q8_0, 0.01},
               {WeightDtype::q4_0, 0.15},
               {WeightDtype::q4_k, 0.15},
               {WeightDtype::q6_k, 0.05}};
  for (const auto& c : cases) {
    std::vector<uint8_t> row(size_t(weight_row_bytes(c.dtype, cols)));
    quantize_block_row(c.dtype, x.data(), cols, row.data());
    ggml::dequantize_row(ggml_type_of(c.dtype), row.data(), cols, back.data());
    double err = 0, norm = 0;
    for (int64_t i = 0; i < cols; ++i) {
      err += (double(back[i]) - x[i]) * (double(back[i]) - x[i]);
      norm += double(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(err / norm), c.bound) << weight_dtype_name(c.dtype);
  }
  // An all-zero row stays zero.
  std::vector<float> zeros(cols, 0.0f);
  for (const auto& c : cases) {
    std::vector<uint8_t> row(size_t(weight_row_bytes(c.dtype, cols)));
    quantize_block_row(c.dtype, zeros.data(), cols, row.data());
    ggml::dequantize_row(ggml_type_of(c.dtype), row.data(), cols, back.data());
    for (float v : back) ASSERT_EQ(v, 0.0f) << weight_dtype_name(c.dtype);
  }
}

TEST(QuantizeModel, RefusesNonFiniteWeightsByName) {
  const nlohmann::json expected = expected_types();
  const auto model = load_gguf_model(kDir + expected["source"].get<std::string>(), discard_log(),
                                     WeightDtype::f32);
  const TensorSpec* spec = model->layout().find("model.layers.1.mlp.up_proj.weight");
  ASSERT_NE(spec, nullptr);
  const float nan = std::nanf("");
  model->store(spec->offset + 3, &nan, 1);
  try {
    quantize_model(*model, QuantMix::q8_0);
    FAIL() << "a NaN weight was quantized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.mlp.up_proj.weight"), std::string::npos)
        << e.what();
  }
}

// W8A8: each weight row takes at most 255 values, multiples of its max|w| / 127, the largest
// kept; a projection with int8 inputs equals the fp32 product of the input rounded to steps of
// its max|x| / 127 over the whole input.
TEST(W8A8, RowsAndInputsRoundToInt8StepsOfTheirAbsmax) {
  const nlohmann::json expected = expected_types();
  const auto model = load_gguf_model(kDir + expected["source"].get<std::string>(), discard_log(),
                                     WeightDtype::f32);
  const TensorSpec* spec = model->layout().find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(spec, nullptr);
  const int64_t cols = spec->shape.back(), rows = spec->numel / cols;
  const std::vector<float> before(model->at(spec->offset), model->at(spec->offset) + spec->numel);
  round_weights_to_int8_rows(*model);
  const float* after = model->at(spec->offset);
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (int64_t i = 0; i < cols; ++i) amax = std::max(amax, std::fabs(before[r * cols + i]));
    for (int64_t i = 0; i < cols; ++i) {
      const float step = amax / 127, q = after[r * cols + i] / step;
      ASSERT_EQ(q, std::nearbyint(q)) << r << " " << i;
      ASSERT_LE(std::fabs(after[r * cols + i] - before[r * cols + i]), step / 2 * 1.0001f);
    }
  }
  const int n = 5;
  std::vector<float> in(size_t(n * cols));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : in) v = normal(rng);
  in[17] = 60.0f;  // a massive activation: the step of every other value grows with it
  std::vector<float> rounded(in.size());
  const float step = 60.0f / 127;
  for (size_t i = 0; i < in.size(); ++i) rounded[i] = std::nearbyint(in[i] * (127 / 60.0f)) * step;
  std::vector<float> got(size_t(n * rows)), want(got.size());
  project({.int8_projection_inputs = true}, *model, spec->offset, got.data(), in.data(), n,
          int(cols), int(rows));
  project({}, *model, spec->offset, want.data(), rounded.data(), n, int(cols), int(rows));
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace gattn
