// A record of the GEMMs a pass runs, by shape (gattn bench --profile times each shape alone to
// give the step's GEMM-bound floor). Off unless a pass's ExecContext names one.
#pragma once
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>

namespace gattn {

// One fp32 GEMM as matmul() ran it: c[m, n] = op(a) op(b) (+ c when accumulate).
struct GemmShape {
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  bool trans_a = false, trans_b = false, accumulate = false;
  // Called from inside an OpenMP parallel region (an attention tile): it ran on one thread
  // while the others ran their own tiles.
  bool in_parallel = false;
  // Its inputs came rounded to bf16 already (SharedOperand, native bf16): no conversion ran.
  bool rounded_inputs = false;
  auto operator<=>(const GemmShape&) const = default;
};

class GemmLog {
 public:
  void add(const GemmShape& shape);
  std::map<GemmShape, int64_t> calls() const;  // how many times each shape ran

 private:
  mutable std::mutex mutex_;
  std::map<GemmShape, int64_t> calls_;
};

}  // namespace gattn
