// The GEMM log (what a pass computed, by shape) and the floor gattn bench --profile builds on it.
#include <gtest/gtest.h>

#include <vector>

#include "ops/gemm_floor.h"
#include "ops/gemm_log.h"
#include "ops/matmul.h"
#include "util/threads.h"

namespace gattn {
namespace {

TEST(GemmLog, RecordsEachShapeWithItsCountAndWhereItRan) {
  const int rows = 16, in_dim = 24, out_dim = 40;
  std::vector<float> in(rows * in_dim, 0.5f), w(out_dim * in_dim, 0.25f), out(rows * out_dim);
  std::vector<float> d_out(rows * out_dim, 1.0f), d_in(rows * in_dim), d_w(out_dim * in_dim);
  GemmLog log;
  const ExecContext logged{.gemm_log = &log};
  linear_forward(logged, out.data(), in.data(), w.data(), rows, in_dim, out_dim);
  linear_forward(logged, out.data(), in.data(), w.data(), rows, in_dim, out_dim);
  linear_backward(logged, d_in.data(), d_w.data(), d_out.data(), in.data(), w.data(), rows, in_dim,
                  out_dim);
  {
    ThreadScope scope(2);
#pragma omp parallel num_threads(2)
    {
      std::vector<float> c(8 * 8);
      matmul<float>(logged, c.data(), in.data(), w.data(), 8, 8, 8, false, true);
    }
  }
  linear_forward({}, out.data(), in.data(), w.data(), rows, in_dim, out_dim);  // not recorded

  const std::map<GemmShape, int64_t> calls = log.calls();
  const GemmShape forward{.m = rows,
                          .n = out_dim,
                          .k = in_dim,
                          .lda = in_dim,
                          .ldb = in_dim,
                          .ldc = out_dim,
                          .trans_b = true};
  const GemmShape d_weight{.m = out_dim,
                           .n = in_dim,
                           .k = rows,
                           .lda = out_dim,
                           .ldb = in_dim,
                           .ldc = in_dim,
                           .trans_a = true,
                           .accumulate = true};
  const GemmShape d_input{
      .m = rows, .n = in_dim, .k = out_dim, .lda = out_dim, .ldb = in_dim, .ldc = in_dim};
  const GemmShape tile{
      .m = 8, .n = 8, .k = 8, .lda = 8, .ldb = 8, .ldc = 8, .trans_b = true, .in_parallel = true};
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls.at(forward), 2);
  EXPECT_EQ(calls.at(d_weight), 1);
  EXPECT_EQ(calls.at(d_input), 1);
  EXPECT_EQ(calls.at(tile), 2);  // one per thread
}

TEST(GemmFloor, AddsEveryCallOfEveryShape) {
  const GemmShape big{.m = 64, .n = 96, .k = 128, .lda = 128, .ldb = 96, .ldc = 96};
  const GemmShape tile{.m = 16,
                       .n = 16,
                       .k = 32,
                       .lda = 32,
                       .ldb = 32,
                       .ldc = 16,
                       .trans_b = true,
                       .in_parallel = true};
  ThreadScope scope(2);
  GemmLog log;
  const GemmFloor floor = measure_gemm_floor({.gemm_log = &log}, {{big, 3}, {tile, 10}});
  EXPECT_EQ(floor.calls(), 13);
  EXPECT_EQ(floor.shapes(), 2);
  EXPECT_NEAR(floor.gflop, 1e-9 * (3 * 2.0 * 64 * 96 * 128 + 10 * 2.0 * 16 * 16 * 32), 1e-12);
  EXPECT_GT(floor.weight_ms, 0);
  EXPECT_GT(floor.tile_ms, 0);
  EXPECT_DOUBLE_EQ(floor.ms, floor.weight_ms + floor.tile_ms);
  EXPECT_TRUE(log.calls().empty());  // the timing runs are not part of the step
}

}  // namespace
}  // namespace gattn
