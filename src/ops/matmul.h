// The one GEMM entry point (BLAS underneath), so a better kernel can replace it in one place.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/exec_context.h"
#include "util/aligned.h"

namespace gattn {

// "fp32", "bf16", "bf16_emulated": the names in run configs and on command lines.
const std::map<std::string, GemmPrecision>& gemm_precision_names();
const char* gemm_precision_name(GemmPrecision precision);
float round_to_bf16(float x);

// c[m, n] = alpha * op(a) op(b) + beta * c, row-major; op(x) = x^T when the flag is set.
// Leading dimensions default (0) to the packed width of each stored matrix.
// The GEMMs below compute in x.precision and are recorded in x.gemm_log.
template <typename T>
void matmul(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k, bool trans_a,
            bool trans_b, T alpha = 1, T beta = 0, int lda = 0, int ldb = 0, int ldc = 0);

// matmul for attention's tiles (many small products inside a parallel region, each on its
// calling thread): sgemm, or the bf16 tile kernel in bf16 mode.
template <typename T>
void tile_matmul(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k,
                 bool trans_a, bool trans_b, T alpha, T beta, int lda, int ldb, int ldc);

// A packed rows x cols matrix that several GEMMs of one op read (the LM head's weight in every
// chunk of rows; a chunk's rows, and its logit gradient, in two GEMMs each). In native bf16,
// prepare() rounds it to bf16 once, instead of each GEMM rounding it again; in any other
// precision it only keeps the pointer. The rounded copy's storage is kept for the next prepare().
template <typename T>
class SharedOperand {
 public:
  void prepare(const ExecContext& x, const T* values, int rows, int cols);
  const T* values() const { return values_; }
  int cols() const { return cols_; }
  const uint16_t* rounded() const { return rounded_valid_ ? rounded_.data() : nullptr; }

 private:
  const T* values_ = nullptr;
  int cols_ = 0;
  bool rounded_valid_ = false;
  std::vector<uint16_t, AlignedAllocator<uint16_t>> rounded_;
};

// matmul on two shared operands (their leading dimensions are their widths; c is packed).
template <typename T>
void matmul(const ExecContext& x, T* c, const SharedOperand<T>& a, const SharedOperand<T>& b, int m,
            int n, int k, bool trans_a, bool trans_b, T alpha = 1, T beta = 0);

// out[rows, out_dim] = in[rows, in_dim] w[out_dim, in_dim]^T (+ out if accumulate); out (and
// d_out below) may have a row stride ld_out wider than out_dim (0: packed). In fp32, at most
// kSmallBatchRows rows (a decode step) go to small_batch_linear (ops/small_batch_linear.h).
template <typename T>
void linear_forward(const ExecContext& x, T* out, const T* in, const T* w, int rows, int in_dim,
                    int out_dim, bool accumulate = false, int ld_out = 0);

// d_w += d_out^T in; d_in = d_out w (+ d_in if accumulate_d_in). Either output may be null.
template <typename T>
void linear_backward(const ExecContext& x, T* d_in, T* d_w, const T* d_out, const T* in, const T* w,
                     int rows, int in_dim, int out_dim, bool accumulate_d_in = false,
                     int ld_out = 0);

}  // namespace gattn
