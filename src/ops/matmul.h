// The one GEMM entry point (BLAS underneath), so a better kernel can replace it in one place.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/aligned.h"

namespace gattn {

// How float GEMMs compute (process-wide; fp32 by default):
// - fp32: OpenBLAS sgemm.
// - bf16: mixed precision on the CPU's bf16 instructions: matmul's inputs rounded to bfloat16
//   (nearest even), products summed in fp32: weight GEMMs through oneDNN (ops/bf16_gemm.h),
//   attention's tiles (tile_matmul) on a register-blocked kernel (ops/bf16_tile.h).
// - bf16_emulated: every GEMM, the attention tiles too, rounds its inputs to bf16 and runs fp32
//   sgemm. The products of bf16 values are exact in fp32, so this computes what bf16 hardware
//   does up to the order of the additions: the oracle the native mode is tested against.
enum class GemmPrecision { fp32, bf16, bf16_emulated };
// "fp32", "bf16", "bf16_emulated": the names in run configs and on command lines.
const std::map<std::string, GemmPrecision>& gemm_precision_names();
const char* gemm_precision_name(GemmPrecision precision);
// Fails (gattn::Error) for bf16 where native_bf16_gemm_available() is false.
void set_gemm_precision(GemmPrecision precision);
GemmPrecision gemm_precision();
float round_to_bf16(float x);

// Sets the precision for its lifetime and restores the one before (also when unwinding).
class GemmPrecisionScope {
 public:
  explicit GemmPrecisionScope(GemmPrecision p) : before_(gemm_precision()) {
    set_gemm_precision(p);
  }
  ~GemmPrecisionScope() { set_gemm_precision(before_); }
  GemmPrecisionScope(const GemmPrecisionScope&) = delete;
  GemmPrecisionScope& operator=(const GemmPrecisionScope&) = delete;

 private:
  GemmPrecision before_;
};

// c[m, n] = alpha * op(a) op(b) + beta * c, row-major; op(x) = x^T when the flag is set.
// Leading dimensions default (0) to the packed width of each stored matrix.
template <typename T>
void matmul(T* c, const T* a, const T* b, int m, int n, int k, bool trans_a, bool trans_b,
            T alpha = 1, T beta = 0, int lda = 0, int ldb = 0, int ldc = 0);

// matmul for attention's tiles (many small products inside a parallel region, each on its
// calling thread): sgemm, or the bf16 tile kernel in bf16 mode.
template <typename T>
void tile_matmul(T* c, const T* a, const T* b, int m, int n, int k, bool trans_a, bool trans_b,
                 T alpha, T beta, int lda, int ldb, int ldc);

// A packed rows x cols matrix that several GEMMs of one op read (the LM head's weight in every
// chunk of rows; a chunk's rows, and its logit gradient, in two GEMMs each). In native bf16,
// prepare() rounds it to bf16 once, instead of each GEMM rounding it again; in any other
// precision it only keeps the pointer. The rounded copy's storage is kept for the next prepare().
template <typename T>
class SharedOperand {
 public:
  void prepare(const T* x, int rows, int cols);
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
void matmul(T* c, const SharedOperand<T>& a, const SharedOperand<T>& b, int m, int n, int k,
            bool trans_a, bool trans_b, T alpha = 1, T beta = 0);

// out[rows, out_dim] = in[rows, in_dim] w[out_dim, in_dim]^T (+ out if accumulate); out (and
// d_out below) may have a row stride ld_out wider than out_dim (0: packed). In fp32, at most
// kSmallBatchRows rows (a decode step) go to small_batch_linear (ops/small_batch_linear.h).
template <typename T>
void linear_forward(T* out, const T* in, const T* w, int rows, int in_dim, int out_dim,
                    bool accumulate = false, int ld_out = 0);

// d_w += d_out^T in; d_in = d_out w (+ d_in if accumulate_d_in). Either output may be null.
template <typename T>
void linear_backward(T* d_in, T* d_w, const T* d_out, const T* in, const T* w, int rows, int in_dim,
                     int out_dim, bool accumulate_d_in = false, int ld_out = 0);

}  // namespace gattn
