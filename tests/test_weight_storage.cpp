// Typed weight storage (model/weights.h, ops/typed_linear.h): bf16 storage holds bf16 only,
// every read of it computes what the f32 path computes on the rounded values, and the loaders
// write it directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "model/infer_state.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "ops/bf16_gemm.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/typed_linear.h"
#include "temp_folder.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

Config small() {
  Config c;
  c.vocab_size = 300;
  c.hidden_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 20;
  c.intermediate_size = 96;
  c.gate.position = GatePosition::sdpa;
  return c;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<uint16_t> bf16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float r = round_to_bf16(v[i]);
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    out[i] = uint16_t(bits >> 16);
  }
  return out;
}

std::vector<float> widened(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t bits = uint32_t(v[i]) << 16;
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

int64_t one_d_values(const ParamLayout& layout) {
  int64_t n = 0;
  for (const TensorSpec& t : layout.tensors()) n += t.shape.size() == 1 ? t.numel : 0;
  return n;
}

TEST(WeightStorage, Bf16HoldsTwoBytesPerParameterAndNoF32Copy) {
  Weights w(small());
  w.init(3);
  const AlignedFloats f32 = w.values();
  w.convert_to_bf16();
  EXPECT_EQ(w.storage(), WeightDtype::bf16);
  EXPECT_EQ(w.parameter_bytes(), 2 * w.size() + 4 * one_d_values(w.layout()));
  EXPECT_THROW(w.values(), InternalError);
  EXPECT_THROW(w.data(), InternalError);
  const ParamLayout& layout = w.layout();
  // A matrix is read through matrix(); at() names it.
  try {
    w.at(layout.layers[0].attention.o_proj);
    ADD_FAILURE() << "at() on a bf16 matrix";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("o_proj.weight' is stored as bf16"), std::string::npos)
        << e.what();
  }
  // 1-D tensors as floats holding the rounded values; matrices as bf16 bits.
  const int64_t norm = layout.layers[1].attention.input_norm;
  for (int i = 0; i < w.config().hidden_size; ++i)
    EXPECT_EQ(w.at(norm)[i], round_to_bf16(f32[norm + i]));
  const WeightView m = w.matrix(layout.layers[1].mlp.down, 64, 96);
  EXPECT_EQ(m.dtype, WeightDtype::bf16);
  for (int64_t i = 0; i < 64 * 96; i += 97) {
    const float r = round_to_bf16(f32[layout.layers[1].mlp.down + i]);
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    EXPECT_EQ(m.bf16()[i], uint16_t(bits >> 16));
  }
}

TEST(WeightStorage, StoreRoundsIntoEachTensorsDtypeAndBf16WeightsAreNotTrained) {
  Weights w(small(), WeightDtype::bf16);
  const int64_t norm = w.layout().final_norm;
  const std::vector<float> v = random_floats(64, 5);
  w.store(norm, v.data(), 64);
  // An elementwise tensor keeps its exact value (Qwen3-Next's 1 + w norms would lose digits).
  for (int i = 0; i < 64; ++i) EXPECT_EQ(w.at(norm)[i], v[i]);
  const TensorSpec& embed = w.layout().tensors()[0];
  w.store(embed.offset, v.data(), 64);
  const WeightView rows = w.matrix(embed.offset, 1, 64);
  for (int i = 0; i < 64; ++i) {
    const float r = round_to_bf16(v[i]);
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    EXPECT_EQ(rows.bf16()[i], uint16_t(bits >> 16)) << "a matrix is rounded to bf16";
  }
  EXPECT_THROW(w.store(norm + 10, v.data(), 64), InternalError);  // past the tensor's end
  TrainState state(w);
  std::vector<int32_t> ids(8, 1), targets(8, 2);
  try {
    state.forward_backward({ids.data(), targets.data(), 1, 8}, 1.0f);
    ADD_FAILURE() << "trained bf16 storage";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training needs the model's weights in f32"),
              std::string::npos)
        << e.what();
  }
}

// The widened panels give sgemm's products on the rounded matrix: one panel, several, uneven
// ones, any output stride, the stride's gap untouched. Not bit for bit: OpenBLAS may sum a
// narrower GEMM in another order (its small-matrix kernel on SkylakeX, other blockings on
// Haswell): within 1e-6 of sum |a b|.
TEST(TypedLinear, Bf16PanelsEqualSgemmOnTheWidenedMatrix) {
  const ThreadScope threads(2);
  const ExecContext exec;
  for (const auto& [rows, in_dim, out_dim] : std::vector<std::tuple<int, int, int>>{
           {9, 64, 17}, {40, 1000, 300}, {256, 128, 5000}, {12, 1024, 1100}}) {
    const std::vector<uint16_t> w = bf16_bits(random_floats(size_t(out_dim) * in_dim, 7));
    const std::vector<float> wf = widened(w), in = random_floats(size_t(rows) * in_dim, 8);
    const int ld = out_dim + 3;
    std::vector<float> expected(size_t(rows) * ld, -1.0f);
    linear_forward(exec, expected.data(), in.data(), wf.data(), rows, in_dim, out_dim, false, ld);
    for (const int64_t panel_bytes :
         {int64_t(0), int64_t(1) << 20, int64_t(3) << 20, int64_t(16) * in_dim * 4}) {
      std::vector<float> got(size_t(rows) * ld, -1.0f);
      typed_linear_forward(
          exec, got.data(), in.data(),
          {.dtype = WeightDtype::bf16, .data = w.data(), .rows = out_dim, .cols = in_dim}, rows, ld,
          panel_bytes);
      const std::string shape = std::to_string(rows) + "x" + std::to_string(in_dim) + "x" +
                                std::to_string(out_dim) + ", panels of " +
                                std::to_string(panel_bytes) + " bytes";
      for (int r = 0; r < rows; ++r) {
        EXPECT_EQ(got[size_t(r) * ld + out_dim], -1.0f) << shape;  // the stride's gap untouched
        for (int c = 0; c < out_dim; ++c) {
          const float e = expected[size_t(r) * ld + c];
          ASSERT_NEAR(got[size_t(r) * ld + c], e, 1e-6f * in_dim) << shape;  // ~ sum |a b| 1e-6
        }
      }
    }
  }
}

// In GemmPrecision::bf16 the stored bf16 matrix goes to the CPU's bf16 GEMM as it is: the same
// numbers as the bf16 GEMM on the f32 copy (which rounds it first), without the copy.
TEST(TypedLinear, Bf16PrecisionReadsTheStoredBf16) {
  if (!native_bf16_gemm_available())
    GTEST_SKIP() << "no native bf16 GEMM: " << native_bf16_gemm_unavailable_reason();
  const ExecContext exec{.precision = GemmPrecision::bf16};
  const int rows = 33, in_dim = 96, out_dim = 200;
  const std::vector<uint16_t> w = bf16_bits(random_floats(size_t(out_dim) * in_dim, 9));
  const std::vector<float> wf = widened(w), in = random_floats(size_t(rows) * in_dim, 10);
  std::vector<float> expected(size_t(rows) * out_dim), got(expected.size());
  linear_forward(exec, expected.data(), in.data(), wf.data(), rows, in_dim, out_dim);
  typed_linear_forward(
      exec, got.data(), in.data(),
      {.dtype = WeightDtype::bf16, .data = w.data(), .rows = out_dim, .cols = in_dim}, rows);
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * 4), 0);
}

TEST(TypedLinear, Bf16EmbeddingRowsAreTheWidenedRows) {
  const int vocab = 50, dim = 24;
  const std::vector<uint16_t> table = bf16_bits(random_floats(size_t(vocab) * dim, 11));
  const std::vector<float> tf = widened(table);
  const std::vector<int32_t> ids = {3, 0, 49, 3};
  std::vector<float> expected(ids.size() * dim), got(expected.size());
  embedding_forward(expected.data(), ids.data(), tf.data(), 4, dim, vocab);
  const WeightView view{
      .dtype = WeightDtype::bf16, .data = table.data(), .rows = vocab, .cols = dim};
  embedding_forward(got.data(), ids.data(), view, 4);
  EXPECT_EQ(got, expected);
  const std::vector<int32_t> bad = {50};
  EXPECT_THROW(embedding_forward(got.data(), bad.data(), view, 1), Error);
}

// A checkpoint read straight into bf16 storage holds what loading f32 and converting holds, and
// its logits (prefill and decode) are those of the converted model, bit for bit.
using WeightStorageFiles = TempFolderTest;

TEST_F(WeightStorageFiles, CheckpointLoadsStraightIntoBf16) {
  const ThreadScope threads(2);
  {
    Weights w(small());
    w.init(12);
    save_model(path("m"), w);
  }
  const auto direct = load_model(path("m"), WeightDtype::bf16);
  const auto converted = load_model(path("m"));
  converted->convert_to_bf16();
  ASSERT_EQ(direct->storage(), WeightDtype::bf16);
  ASSERT_EQ(direct->parameter_bytes(), converted->parameter_bytes());
  EXPECT_EQ(std::memcmp(direct->bf16_data(), converted->bf16_data(), size_t(direct->size()) * 2),
            0);
  const int V = direct->config().vocab_size, T = 20;
  std::vector<int32_t> ids(T);
  for (int i = 0; i < T; ++i) ids[i] = (i * 37 + 5) % V;
  std::vector<float> a(size_t(T) * V), b(a.size());
  for (auto [model, out] : {std::pair{direct.get(), &a}, std::pair{converted.get(), &b}}) {
    InferState infer(*model, T, 12);
    infer.forward(ids.data(), 12, out->data());
    for (int p = 12; p < T; ++p) infer.forward(ids.data() + p, 1, out->data() + size_t(p) * V);
  }
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

}  // namespace
}  // namespace gattn
