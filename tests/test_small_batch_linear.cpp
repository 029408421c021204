// The decode kernel (ops/small_batch_linear.h) against a float64 product, for fp32 and bf16
// weights, every row count it takes, input widths with and without a SIMD tail, a wide output
// stride and accumulation; and linear_forward's dispatch to it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/matmul.h"
#include "ops/small_batch_linear.h"
#include "util/threads.h"

namespace gattn {
namespace {

uint16_t to_bf16(float x) {  // truncation is enough: the reference reads the same bits
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}
float from_bf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Random normal weights [out_dim, in_dim] in fp32 and their bf16 truncation, and the kernel on
// either.
struct TestWeights {
  TestWeights(int out_dim, int in_dim, std::mt19937& rng) : fp32(size_t(out_dim) * in_dim) {
    std::normal_distribution<float> normal;
    for (float& x : fp32) x = normal(rng);
    for (float x : fp32) bf16.push_back(to_bf16(x));
  }
  void apply(bool use_bf16, float* out, const float* in, int rows, int in_dim, int out_dim,
             bool accumulate = false, int ld_out = 0) const {
    if (use_bf16)
      small_batch_linear(out, in, bf16.data(), rows, in_dim, out_dim, accumulate, ld_out);
    else
      small_batch_linear(out, in, fp32.data(), rows, in_dim, out_dim, accumulate, ld_out);
  }
  std::vector<float> fp32;
  std::vector<uint16_t> bf16;
};

struct Case {
  int rows, in_dim, out_dim;
};

class SmallBatchLinear : public ::testing::TestWithParam<Case> {};

TEST_P(SmallBatchLinear, MatchesFloat64ForFp32AndBf16Weights) {
  const auto [rows, in_dim, out_dim] = GetParam();
  std::mt19937 rng(rows * 1000 + in_dim);
  std::normal_distribution<float> normal;
  std::vector<float> in(size_t(rows) * in_dim);
  for (float& x : in) x = normal(rng);
  const TestWeights weights(out_dim, in_dim, rng);
  const std::vector<float>& w = weights.fp32;
  const std::vector<uint16_t>& w_bf16 = weights.bf16;

  const int ld_out = out_dim + 3;
  for (int threads : {1, 2}) {
    ThreadScope scope(threads);
    for (bool bf16 : {false, true}) {
      for (bool accumulate : {false, true}) {
        std::vector<float> out(size_t(rows) * ld_out, 0.5f);
        weights.apply(bf16, out.data(), in.data(), rows, in_dim, out_dim, accumulate, ld_out);
        for (int r = 0; r < rows; ++r)
          for (int n = 0; n < ld_out; ++n) {
            const float got = out[size_t(r) * ld_out + n];
            if (n >= out_dim) {
              ASSERT_EQ(got, 0.5f) << "wrote past out_dim at row " << r;
              continue;
            }
            double ref = accumulate ? 0.5 : 0.0, scale = 0;
            for (int k = 0; k < in_dim; ++k) {
              const double wk =
                  bf16 ? from_bf16(w_bf16[size_t(n) * in_dim + k]) : w[size_t(n) * in_dim + k];
              ref += double(in[size_t(r) * in_dim + k]) * wk;
              scale += std::fabs(double(in[size_t(r) * in_dim + k]) * wk);
            }
            ASSERT_NEAR(got, ref, 1e-6 * (scale + 1))
                << "row " << r << " column " << n << (bf16 ? " bf16" : " fp32")
                << (accumulate ? " accumulate" : "") << " threads " << threads;
          }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SmallBatchLinear,
                         ::testing::Values(Case{1, 1, 1}, Case{1, 7, 5}, Case{2, 31, 9},
                                           Case{3, 32, 17}, Case{1, 33, 64}, Case{4, 100, 300},
                                           Case{8, 1029, 70}, Case{1, 1024, 1030},
                                           Case{5, 64, 2048}),
                         [](const auto& test) {
                           return std::to_string(test.param.rows) + "x" +
                                  std::to_string(test.param.in_dim) + "to" +
                                  std::to_string(test.param.out_dim);
                         });

// linear_forward sends decode-sized batches to the kernel and larger ones to sgemm: both agree.
TEST(SmallBatchLinear, LinearForwardAgreesAcrossTheDispatchBoundary) {
  const int in_dim = 96, out_dim = 80, rows = kSmallBatchRows + 1;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> in(size_t(rows) * in_dim), w(size_t(out_dim) * in_dim);
  for (float& x : in) x = normal(rng);
  for (float& x : w) x = normal(rng);
  std::vector<float> all(size_t(rows) * out_dim), few(size_t(rows - 1) * out_dim);
  linear_forward(ExecContext{}, all.data(), in.data(), w.data(), rows, in_dim, out_dim);  // sgemm
  linear_forward(ExecContext{}, few.data(), in.data(), w.data(), rows - 1, in_dim,
                 out_dim);  // the kernel
  for (size_t i = 0; i < few.size(); ++i) EXPECT_NEAR(few[i], all[i], 1e-4) << i;
}

// A row's outputs are the same bits whatever else is in the batch, wherever it sits in it and
// however many threads run: a request's tokens at temperature 0 do not depend on what else the
// server decodes with it.
TEST(SmallBatchLinear, RowsDoNotDependOnTheBatchOrTheThreads) {
  const int in_dim = 1029, out_dim = 70;  // a SIMD tail, and columns left over per thread
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> in(size_t(kSmallBatchRows) * in_dim);
  for (float& x : in) x = normal(rng);
  const TestWeights weights(out_dim, in_dim, rng);
  for (bool bf16 : {false, true}) {
    auto run = [&](const float* rows_in, int rows, int threads) {
      ThreadScope scope(threads);
      std::vector<float> out(size_t(rows) * out_dim);
      weights.apply(bf16, out.data(), rows_in, rows, in_dim, out_dim);
      return out;
    };
    for (int rows = 1; rows <= kSmallBatchRows; ++rows)
      for (int threads : {1, 2}) {
        const std::vector<float> batch = run(in.data(), rows, threads);
        for (int r = 0; r < rows; ++r) {
          const std::vector<float> alone = run(in.data() + size_t(r) * in_dim, 1, 1);
          for (int n = 0; n < out_dim; ++n)
            ASSERT_EQ(batch[size_t(r) * out_dim + n], alone[n])
                << "row " << r << " of " << rows << ", column " << n << ", threads " << threads
                << (bf16 ? " bf16" : " fp32");
        }
      }
  }
}

}  // namespace
}  // namespace gattn
