// bf16 GEMMs: the emulation (inputs rounded to nearest-even bf16, fp32 sgemm) against an exact
// sum, and the native mode (the CPU's bf16 dot products through oneDNN) against the emulation, for
// single GEMMs and for a whole training step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "model/train_state.h"
#include "ops/bf16_gemm.h"
#include "ops/bf16_tile.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa, 1.
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
  EXPECT_EQ(round_to_bf16(-2.5f), -2.5f);
  EXPECT_EQ(bits(round_to_bf16(0.3f)) & 0xffffu, 0u);
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));  // rounds up
}

TEST(Bf16, EmulatedGemmMultipliesTheRoundedInputs) {
  const int m = 7, n = 5, k = 33, lda = 40;  // a transposed, with a wider leading dimension
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> a(size_t(k) * lda), b(size_t(k) * n), c(size_t(m) * n, 1.0f);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  matmul<float>({.precision = GemmPrecision::bf16_emulated}, c.data(), a.data(), b.data(), m, n, k,
                true, false, 0.5f, 2.0f, lda);
  std::vector<float> fp32(size_t(m) * n, 1.0f);
  matmul<float>({}, fp32.data(), a.data(), b.data(), m, n, k, true, false, 0.5f, 2.0f, lda);
  double differs = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < k; ++p)
        want += double(round_to_bf16(a[size_t(p) * lda + i])) * round_to_bf16(b[size_t(p) * n + j]);
      want = 0.5 * want + 2.0;
      EXPECT_NEAR(c[i * n + j], want, 1e-5 * (1 + std::abs(want)));
      differs = std::max(differs, std::abs(double(fp32[i * n + j]) - c[i * n + j]));
    }
  EXPECT_GT(differs, 1e-3);  // the rounding is visible against fp32
}

TEST(Bf16, ConversionRoundsLikeRoundToBf16) {
  // Ties both ways, values near overflow, signed zeros, subnormals (flushed to zero, as the
  // instructions do) and infinities; 70 values so
  // that the vector loop (32 at a time) and the scalar tail both run, with a row stride.
  std::vector<float> x = {1.0f + 0x1p-8f,
                          1.0f + 3 * 0x1p-8f,
                          -2.5f,
                          0.3f,
                          -0.0f,
                          0.0f,
                          1e-40f,
                          -1e-41f,
                          std::numeric_limits<float>::max(),
                          -65504.0f,
                          std::numeric_limits<float>::infinity()};
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0, 100);
  while (x.size() < 140) x.push_back(normal(rng));
  std::vector<uint16_t> out(2 * 70);
  to_bf16(x.data(), 2, 70, 70, out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    const bool subnormal = x[i] != 0 && std::abs(x[i]) < std::numeric_limits<float>::min();
    const uint32_t want = subnormal ? bits(std::copysign(0.0f, x[i])) : bits(round_to_bf16(x[i]));
    EXPECT_EQ(out[i], want >> 16) << "value " << x[i] << " at " << i;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  to_bf16(&nan, 1, 1, 1, out.data());
  EXPECT_EQ(out[0] & 0x7f80u, 0x7f80u);
  EXPECT_NE(out[0] & 0x7fu, 0u) << "NaN stays NaN";
}

// Native bf16 computes the emulation's products (both exact in fp32) and differs only in the
// order of the fp32 additions: every shape, transpose, scale and stride agrees to fp32 rounding
// of the sum of |products|, while both differ from fp32 by the input rounding.
TEST(Bf16, NativeGemmEqualsTheEmulation) {
  if (!native_bf16_gemm_available())
    GTEST_SKIP() << "no bf16 GEMM here (no avx512_bf16, or GATTN_ISA=avx2)";
  struct Case {
    int m, n, k;
    bool trans_a = false, trans_b = false;
    float alpha = 1, beta = 0;
    int pad = 0;  // extra columns of every leading dimension
  };
  const Case cases[] = {
      {.m = 7, .n = 5, .k = 33, .trans_a = true, .alpha = 0.5f, .beta = 2.0f, .pad = 3},
      {.m = 64, .n = 96, .k = 130, .trans_b = true},
      {.m = 300, .n = 257, .k = 64, .beta = 1, .pad = 5},
      {.m = 1, .n = 40, .k = 512, .trans_a = true, .trans_b = true, .alpha = 0.125f}};
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (const Case& t : cases) {
    const int lda = (t.trans_a ? t.m : t.k) + t.pad, ldb = (t.trans_b ? t.k : t.n) + t.pad;
    const int ldc = t.n + t.pad;
    std::vector<float> a(size_t(t.trans_a ? t.k : t.m) * lda),
        b(size_t(t.trans_b ? t.n : t.k) * ldb);
    std::vector<float> c0(size_t(t.m) * ldc);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    for (float& x : c0) x = normal(rng);
    auto run = [&](GemmPrecision p) {
      std::vector<float> c = c0;
      matmul<float>({.precision = p}, c.data(), a.data(), b.data(), t.m, t.n, t.k, t.trans_a,
                    t.trans_b, t.alpha, t.beta, lda, ldb, ldc);
      return c;
    };
    const auto native = run(GemmPrecision::bf16), emulated = run(GemmPrecision::bf16_emulated);
    const auto fp32 = run(GemmPrecision::fp32);
    double worst = 0, rounding = 0;
    for (int i = 0; i < t.m; ++i)
      for (int j = 0; j < t.n; ++j) {
        const size_t at = size_t(i) * ldc + j;
        worst = std::max(worst, std::abs(double(native[at]) - emulated[at]));
        rounding = std::max(rounding, std::abs(double(fp32[at]) - emulated[at]));
      }
    for (int i = 0; i < t.m; ++i)  // the padding between rows is not written
      for (int j = t.n; j < ldc; ++j)
        ASSERT_EQ(native[size_t(i) * ldc + j], c0[size_t(i) * ldc + j]);
    const double sum_scale = std::abs(t.alpha) * std::sqrt(double(t.k)) * 4;
    EXPECT_LT(worst, 1e-5 * sum_scale) << t.m << "x" << t.n << "x" << t.k;
    EXPECT_GT(rounding, 10 * worst) << "the bf16 rounding dominates the order of the additions";
  }
}

// The attention tile kernel against the emulation: every transpose, shapes around its blocks (4
// rows, 16-lane vectors, 64 columns), odd k, accumulate or not, strided rows.
// A SharedOperand (rounded once, read by several GEMMs) gives the bits of the GEMMs that round
// their inputs themselves, in every precision; in native bf16 it runs without converting.
TEST(Bf16, SharedOperandsGiveTheSameBitsAsPlainGemms) {
  const int m = 70, n = 48, k = 96;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> a(size_t(k) * m), b(size_t(n) * k), c0(size_t(m) * n);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (float& x : c0) x = normal(rng);
  std::vector<GemmPrecision> precisions = {GemmPrecision::fp32, GemmPrecision::bf16_emulated};
  if (native_bf16_gemm_available()) precisions.push_back(GemmPrecision::bf16);
  for (const GemmPrecision p : precisions) {
    const ExecContext x{.precision = p};
    SharedOperand<float> a_shared, b_shared;
    a_shared.prepare(x, a.data(), k, m);  // a^T b^T
    b_shared.prepare(x, b.data(), n, k);
    EXPECT_EQ(a_shared.rounded() != nullptr, p == GemmPrecision::bf16) << gemm_precision_name(p);
    std::vector<float> plain = c0, shared = c0;
    matmul<float>(x, plain.data(), a.data(), b.data(), m, n, k, true, true, 0.5f, 1.0f);
    matmul<float>(x, shared.data(), a_shared, b_shared, m, n, k, true, true, 0.5f, 1.0f);
    for (size_t i = 0; i < plain.size(); ++i)
      ASSERT_EQ(bits(plain[i]), bits(shared[i])) << gemm_precision_name(p) << " at " << i;
  }
}

using TileGemm = void (*)(float*, const float*, const float*, int, int, int, bool, bool, float,
                          float, int, int, int);

// One product of the tile tests: its inputs, and c computed by a tile function (or the emulation).
struct TileCase {
  int m, n, k;
  bool ta, tb;
  float beta;
  int lda, ldb, ldc;
  std::vector<float> a, b, c0;
  std::string what() const { return cat(m, "x", n, "x", k, " trans ", ta, tb, " beta ", beta); }
  std::vector<float> run(TileGemm tile) const {
    std::vector<float> c = c0;
    tile(c.data(), a.data(), b.data(), m, n, k, ta, tb, 0.25f, beta, lda, ldb, ldc);
    for (int i = 0; i < m; ++i)  // the padding between rows is not written
      EXPECT_EQ(bits(c[size_t(i) * ldc + n]), bits(c0[size_t(i) * ldc + n])) << what();
    return c;
  }
  std::vector<float> emulated() const {
    std::vector<float> c = c0;
    tile_matmul<float>({.precision = GemmPrecision::bf16_emulated}, c.data(), a.data(), b.data(), m,
                       n, k, ta, tb, 0.25f, beta, lda, ldb, ldc);
    return c;
  }
};

// Every shape around the kernel's blocks (4 rows, 16-lane vectors, 64 columns), odd k, every
// transpose, accumulate or not, strided rows; a share `special` of the inputs are subnormals,
// zeros of both signs and values whose products are subnormal, where the kernel flushes.
template <typename Body>
void for_every_tile_case(float special, Body body) {
  std::mt19937 rng(6);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform;
  const float specials[] = {1e-39f, -3e-40f, 0x1p-70f, -0x1p-64f, 0.0f, -0.0f, 0x1p-126f};
  const auto value = [&] {
    return uniform(rng) < special ? specials[rng() % std::size(specials)] : normal(rng);
  };
  const int sizes[][3] = {{64, 64, 64}, {1, 1, 1},    {5, 17, 3},  {63, 130, 20},
                          {13, 64, 65}, {64, 20, 64}, {4, 16, 32}, {9, 33, 1}};
  for (const auto& size : sizes)
    for (int transposes = 0; transposes < 4; ++transposes)
      for (const float beta : {0.0f, 1.0f}) {
        TileCase t{.m = size[0],
                   .n = size[1],
                   .k = size[2],
                   .ta = bool(transposes & 1),
                   .tb = bool(transposes & 2),
                   .beta = beta,
                   .lda = 0,
                   .ldb = 0,
                   .ldc = 0,
                   .a = {},
                   .b = {},
                   .c0 = {}};
        t.lda = (t.ta ? t.m : t.k) + 2, t.ldb = (t.tb ? t.k : t.n) + 3, t.ldc = t.n + 1;
        t.a.resize(size_t(t.ta ? t.k : t.m) * t.lda);
        t.b.resize(size_t(t.tb ? t.n : t.k) * t.ldb);
        t.c0.resize(size_t(t.m) * t.ldc);
        for (float& x : t.a) x = value();
        for (float& x : t.b) x = value();
        for (float& x : t.c0) x = normal(rng);
        body(t);
      }
}

void expect_near_emulation(TileGemm tile) {
  for_every_tile_case(0, [&](const TileCase& t) {
    const std::vector<float> ours = t.run(tile), emulated = t.emulated();
    double worst = 0;
    for (int i = 0; i < t.m; ++i)
      for (int j = 0; j < t.n; ++j)
        worst = std::max(
            worst, std::abs(double(ours[size_t(i) * t.ldc + j]) - emulated[size_t(i) * t.ldc + j]));
    EXPECT_LT(worst, 1e-5 * std::sqrt(double(t.k)) + 1e-6) << t.what();
  });
}

TEST(Bf16, TileKernelEqualsTheEmulation) {
  if (!bf16_tiles_available())
    GTEST_SKIP() << "no bf16 tile kernel here (no avx512_bf16, or GATTN_ISA=avx2)";
  expect_near_emulation(bf16_tile_gemm);
}

// The kernel's packing, blocking and tail code runs on every CPU through its scalar model.
TEST(Bf16, TileKernelScalarModelEqualsTheEmulation) {
  expect_near_emulation(bf16_tile_gemm_scalar_model);
}

// Where the instructions exist, the model is the kernel, bit for bit, subnormals included.
TEST(Bf16, TileKernelScalarModelGivesTheKernelsBits) {
  if (!bf16_tiles_available())
    GTEST_SKIP() << "no bf16 tile kernel here (no avx512_bf16, or GATTN_ISA=avx2)";
  for (const float special : {0.0f, 0.3f})
    for_every_tile_case(special, [](const TileCase& t) {
      const std::vector<float> kernel = t.run(bf16_tile_gemm),
                               model = t.run(bf16_tile_gemm_scalar_model);
      for (size_t i = 0; i < kernel.size(); ++i)
        ASSERT_EQ(bits(kernel[i]), bits(model[i])) << t.what() << " at " << i;
    });
}

// A whole training step (forward and backward through every GEMM of a gated model) in native
// bf16 against the emulation: loss and gradients agree far inside bf16's own error against fp32.
TEST(Bf16, NativeTrainingStepTracksTheEmulation) {
  if (!native_bf16_gemm_available())
    GTEST_SKIP() << "no bf16 GEMM here (no avx512_bf16, or GATTN_ISA=avx2)";
  const ThreadScope threads(2);
  Config c;
  c.vocab_size = 300;
  c.hidden_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.gate.position = GatePosition::sdpa;
  const int batch = 2, seq = 80;
  std::vector<int32_t> ids(batch * seq), targets(batch * seq);
  std::mt19937_64 rng(4);
  for (auto& id : ids) id = int32_t(rng() % c.vocab_size);
  for (size_t i = 0; i < ids.size(); ++i) targets[i] = (i + 1) % seq ? ids[i + 1] : -1;
  Weights w(c);
  w.init(5);
  auto step = [&](GemmPrecision p, double& loss) {
    TrainState m(w);
    m.set_exec({.precision = p});
    m.zero_grads();
    loss = m.forward_backward({ids.data(), targets.data(), batch, seq}, 1.0f).nats;
    return m.grads().values();
  };
  double native_loss = 0, emulated_loss = 0, fp32_loss = 0;
  const auto native = step(GemmPrecision::bf16, native_loss);
  const auto emulated = step(GemmPrecision::bf16_emulated, emulated_loss);
  const auto fp32 = step(GemmPrecision::fp32, fp32_loss);
  double native_gap = 0, bf16_gap = 0, norm = 0;
  for (size_t i = 0; i < native.size(); ++i) {
    native_gap += std::pow(double(native[i]) - emulated[i], 2);
    bf16_gap += std::pow(double(fp32[i]) - emulated[i], 2);
    norm += std::pow(double(emulated[i]), 2);
  }
  EXPECT_NEAR(native_loss, emulated_loss, 1e-5 * std::abs(emulated_loss));
  EXPECT_NE(fp32_loss, emulated_loss);
  // Relative to the emulation's gradient norm: native differs from it by the order of the fp32
  // additions, amplified through the step: a last-bit difference flips the bf16 rounding of an
  // input of the next GEMM when it sits at a rounding boundary. oneDNN's avx512_bf16 kernels sum
  // in nearly OpenBLAS's order (measured 1.2e-5); its AMX kernels in another (1.2e-3 on a Xeon
  // with amx_bf16, against 6.3e-3 for fp32), so more inputs flip.
  const bool amx = native_bf16_gemm_uses_amx();
  EXPECT_LT(std::sqrt(native_gap / norm), amx ? 3e-3 : 1e-3);
  EXPECT_LT((amx ? 2 : 10) * std::sqrt(native_gap), std::sqrt(bf16_gap));
  EXPECT_GT(std::sqrt(bf16_gap / norm), 1e-4);
}

TEST(Bf16, NativeModeNeedsTheInstructions) {
  Config c;
  c.vocab_size = c.hidden_size = c.head_dim = c.intermediate_size = 8;
  c.num_hidden_layers = c.num_attention_heads = c.num_key_value_heads = 1;
  Weights w(c);
  TrainState state(w);
  if (native_bf16_gemm_available()) {
    state.set_exec({.precision = GemmPrecision::bf16});
    EXPECT_EQ(state.exec().precision, GemmPrecision::bf16);
  } else {
    EXPECT_THROW(state.set_exec({.precision = GemmPrecision::bf16}), Error);
    EXPECT_EQ(state.exec().precision, GemmPrecision::fp32);
  }
  EXPECT_NO_THROW(check_gemm_precision(GemmPrecision::bf16_emulated));
}

}  // namespace
}  // namespace gattn
