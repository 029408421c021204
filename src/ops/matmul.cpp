#include "ops/matmul.h"

#include <cblas.h>

namespace gattn {

namespace {
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
          const double* a, int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
}  // namespace

template <typename T>
void matmul(T* c, const T* a, const T* b, int m, int n, int k, bool trans_a, bool trans_b, T alpha,
            T beta, int lda, int ldb, int ldc) {
  if (m == 0 || n == 0) return;
  if (lda == 0) lda = trans_a ? m : k;
  if (ldb == 0) ldb = trans_b ? k : n;
  if (ldc == 0) ldc = n;
  gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
       lda, b, ldb, beta, c, ldc);
}

template <typename T>
void linear_forward(T* out, const T* in, const T* w, int rows, int in_dim, int out_dim,
                    bool accumulate, int ld_out) {
  matmul<T>(out, in, w, rows, out_dim, in_dim, false, true, 1, accumulate ? 1 : 0, 0, 0, ld_out);
}

template <typename T>
void linear_backward(T* d_in, T* d_w, const T* d_out, const T* in, const T* w, int rows, int in_dim,
                     int out_dim, bool accumulate_d_in, int ld_out) {
  const int ld = ld_out ? ld_out : out_dim;
  if (d_w) matmul<T>(d_w, d_out, in, out_dim, in_dim, rows, true, false, 1, 1, ld);
  if (d_in)
    matmul<T>(d_in, d_out, w, rows, in_dim, out_dim, false, false, 1, accumulate_d_in ? 1 : 0, ld);
}

#define GATTN_INSTANTIATE(T)                                                                       \
  template void matmul<T>(T*, const T*, const T*, int, int, int, bool, bool, T, T, int, int, int); \
  template void linear_forward<T>(T*, const T*, const T*, int, int, int, bool, int);               \
  template void linear_backward<T>(T*, T*, const T*, const T*, const T*, int, int, int, bool, int);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
