// bf16 products of small matrices (attention's 64 x 64 tiles) on the CPU's bf16 dot-product
// instruction (vdpbf16ps), without a library call per tile: both operands are rounded to bf16 and
// packed as pairs of k, and a register-blocked kernel sums their products in fp32.
// tile_matmul() routes here in GemmPrecision::bf16 (ops/matmul.h).
#pragma once

namespace gattn {

// Whether the kernel runs here: a CPU with avx512_bf16, and the ISA in use avx512
// (util/cpu_isa.h; GATTN_ISA=avx2 turns it off). Decided at the first call.
bool bf16_tiles_available();

// c[m, n] = alpha * op(a) op(b) + beta * c, row-major, as matmul<float> with explicit leading
// dimensions; inputs rounded to bf16 (subnormals to zero, as ops/bf16_gemm.h's to_bf16). Runs on
// the calling thread. With beta 0, c is not read. Only where bf16_tiles_available().
void bf16_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                    bool trans_b, float alpha, float beta, int lda, int ldb, int ldc);

// The same kernel (packing, blocking, tails) on every CPU, its instructions computed lane by lane
// as the Intel SDM defines them: vdpbf16ps sums the high then the low product pair into each lane,
// each exact product added with one rounding, subnormal inputs and results flushed to zero. Equal
// bit for bit to bf16_tile_gemm where that exists; slow: for tests of the kernel's code on CPUs
// without avx512_bf16.
void bf16_tile_gemm_scalar_model(float* c, const float* a, const float* b, int m, int n, int k,
                                 bool trans_a, bool trans_b, float alpha, float beta, int lda,
                                 int ldb, int ldc);

}  // namespace gattn
