#include "ops/matmul.h"

#include <cblas.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/bf16_tile.h"
#include "ops/gemm_log.h"
#include "ops/small_batch_linear.h"
#include "util/error.h"

namespace gattn {

namespace {
// Copies the rows x cols matrix at x (leading dimension ld) into buffer, packed and rounded.
const float* rounded_copy(const float* x, int rows, int cols, int ld, std::vector<float>& buffer) {
  buffer.resize(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      buffer[size_t(r) * cols + c] = round_to_bf16(x[size_t(r) * ld + c]);
  return buffer.data();
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
          const double* a, int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
}  // namespace

const std::map<std::string, GemmPrecision>& gemm_precision_names() {
  static const std::map<std::string, GemmPrecision> names = {
      {"fp32", GemmPrecision::fp32},
      {"bf16", GemmPrecision::bf16},
      {"bf16_emulated", GemmPrecision::bf16_emulated}};
  return names;
}

const char* gemm_precision_name(GemmPrecision p) {
  for (const auto& [name, value] : gemm_precision_names())
    if (value == p) return name.c_str();
  return "?";
}

void check_gemm_precision(GemmPrecision p) {
  if (p == GemmPrecision::bf16 && !native_bf16_gemm_available())
    fail("precision bf16 needs bf16 dot-product instructions (avx512_bf16): ",
         native_bf16_gemm_unavailable_reason(), "; use \"fp32\" or the slower \"bf16_emulated\"");
}

float round_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return x;  // NaN stays NaN
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

namespace {
// tile: an attention tile (tile_matmul): in native bf16 on ops/bf16_tile's kernel (which runs
// wherever oneDNN's bf16 GEMM does: both need avx512_bf16 and the ISA avx512), else in fp32.
template <typename T>
void gemm_in_precision(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k,
                       bool trans_a, bool trans_b, T alpha, T beta, int lda, int ldb, int ldc,
                       bool tile) {
  if (m == 0 || n == 0) return;
  if (lda == 0) lda = trans_a ? m : k;
  if (ldb == 0) ldb = trans_b ? k : n;
  if (ldc == 0) ldc = n;
  if constexpr (std::is_same_v<T, float>) {
    if (GemmLog* log = x.gemm_log)
      log->add({.m = m,
                .n = n,
                .k = k,
                .lda = lda,
                .ldb = ldb,
                .ldc = ldc,
                .trans_a = trans_a,
                .trans_b = trans_b,
                .accumulate = beta != 0,
                .in_parallel = omp_in_parallel() != 0});
    const GemmPrecision p = x.precision;
    if (p == GemmPrecision::bf16 && k > 0) {
      if (!tile) return bf16_gemm(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc);
      if (bf16_tiles_available())
        return bf16_tile_gemm(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc);
    }
    if (p == GemmPrecision::bf16_emulated && k > 0) {
      thread_local std::vector<float> a_bf16, b_bf16;  // grown once, reused
      const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
      const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
      a = rounded_copy(a, a_rows, a_cols, lda, a_bf16);
      b = rounded_copy(b, b_rows, b_cols, ldb, b_bf16);
      lda = a_cols;
      ldb = b_cols;
    }
  }
  gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
       lda, b, ldb, beta, c, ldc);
}
}  // namespace

template <typename T>
void matmul(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k, bool trans_a,
            bool trans_b, T alpha, T beta, int lda, int ldb, int ldc) {
  gemm_in_precision(x, c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc, false);
}

template <typename T>
void tile_matmul(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k,
                 bool trans_a, bool trans_b, T alpha, T beta, int lda, int ldb, int ldc) {
  gemm_in_precision(x, c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc, true);
}

template <typename T>
void SharedOperand<T>::prepare(const ExecContext& x, const T* values, int rows, int cols) {
  values_ = values;
  cols_ = cols;
  rounded_valid_ = false;
  if constexpr (std::is_same_v<T, float>) {
    if (x.precision != GemmPrecision::bf16) return;
    if (rounded_.size() < size_t(rows) * cols) rounded_.resize(size_t(rows) * cols);
    to_bf16(values, rows, cols, cols, rounded_.data());
    rounded_valid_ = true;
  }
}

template <typename T>
void matmul(const ExecContext& x, T* c, const SharedOperand<T>& a, const SharedOperand<T>& b, int m,
            int n, int k, bool trans_a, bool trans_b, T alpha, T beta) {
  if constexpr (std::is_same_v<T, float>) {
    if (a.rounded() && b.rounded() && x.precision == GemmPrecision::bf16 && m > 0 && n > 0 &&
        k > 0) {
      if (GemmLog* log = x.gemm_log)
        log->add({.m = m,
                  .n = n,
                  .k = k,
                  .lda = a.cols(),
                  .ldb = b.cols(),
                  .ldc = n,
                  .trans_a = trans_a,
                  .trans_b = trans_b,
                  .accumulate = beta != 0,
                  .rounded_inputs = true});
      return bf16_gemm_rounded(c, a.rounded(), b.rounded(), m, n, k, trans_a, trans_b, alpha, beta,
                               n);
    }
  }
  matmul<T>(x, c, a.values(), b.values(), m, n, k, trans_a, trans_b, alpha, beta, a.cols(),
            b.cols(), n);
}

template <typename T>
void linear_forward(const ExecContext& x, T* out, const T* in, const T* w, int rows, int in_dim,
                    int out_dim, bool accumulate, int ld_out) {
  if constexpr (std::is_same_v<T, float>) {
    if (rows <= kSmallBatchRows && x.precision == GemmPrecision::fp32) {
      small_batch_linear(out, in, w, rows, in_dim, out_dim, accumulate, ld_out);
      return;
    }
  }
  matmul<T>(x, out, in, w, rows, out_dim, in_dim, false, true, 1, accumulate ? 1 : 0, 0, 0, ld_out);
}

template <typename T>
void linear_backward(const ExecContext& x, T* d_in, T* d_w, const T* d_out, const T* in, const T* w,
                     int rows, int in_dim, int out_dim, bool accumulate_d_in, int ld_out) {
  const int ld = ld_out ? ld_out : out_dim;
  if (d_w) matmul<T>(x, d_w, d_out, in, out_dim, in_dim, rows, true, false, 1, 1, ld);
  if (d_in)
    matmul<T>(x, d_in, d_out, w, rows, in_dim, out_dim, false, false, 1, accumulate_d_in ? 1 : 0,
              ld);
}

#define GATTN_INSTANTIATE(T)                                                                       \
  template class SharedOperand<T>;                                                                 \
  template void matmul<T>(const ExecContext&, T*, const SharedOperand<T>&,                         \
                          const SharedOperand<T>&, int, int, int, bool, bool, T, T);               \
  template void matmul<T>(const ExecContext&, T*, const T*, const T*, int, int, int, bool, bool,   \
                          T, T, int, int, int);                                                    \
  template void tile_matmul<T>(const ExecContext&, T*, const T*, const T*, int, int, int, bool,    \
                               bool, T, T, int, int, int);                                         \
  template void linear_forward<T>(const ExecContext&, T*, const T*, const T*, int, int, int, bool, \
                                  int);                                                            \
  template void linear_backward<T>(const ExecContext&, T*, T*, const T*, const T*, const T*, int,  \
                                   int, int, bool, int);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
