// Native bf16 GEMM: both inputs rounded to bfloat16 (nearest even), products summed in fp32 by
// the CPU's bf16 dot-product instructions (avx512_bf16 / AMX), through oneDNN's matmul primitive.
// matmul() routes here in GemmMode::bf16 (ops/matmul.h).
#pragma once
#include <cstdint>
#include <string>

namespace gattn {

// Whether this CPU and oneDNN run a bf16 x bf16 -> fp32 matmul (checked once: the primitive is
// created for a small shape). Without it GemmMode::bf16 is refused by set_gemm_mode.
bool native_bf16_gemm_available();
// Why native_bf16_gemm_available() is false ("" when it is true), for error messages: the ISA in
// use (GATTN_ISA=avx2), the CPU, or oneDNN.
std::string native_bf16_gemm_unavailable_reason();
// The instruction set oneDNN dispatches to ("avx512_core_amx", "avx2", ...): for benchmarks.
std::string onednn_isa_name();
// Whether oneDNN runs it on AMX tiles (TDPBF16PS), which sum the products in another order than
// the avx512_bf16 kernels and OpenBLAS do.
bool native_bf16_gemm_uses_amx();

// out[r * cols + c] = bf16 bits of x[r * ld + c], rounded to nearest even (NaN stays NaN) as
// round_to_bf16, except that subnormal values (|x| < 2^-126) become a signed zero, as the bf16
// instructions treat them (they flush subnormal inputs and results).
void to_bf16(const float* x, int rows, int cols, int ld, uint16_t* out);

// c[m, n] = alpha * op(a) op(b) + beta * c, row-major, as matmul<float>; the inputs are rounded
// to bf16 first. Fails (gattn::Error) if oneDNN cannot run the shape.
void bf16_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
               bool trans_b, float alpha, float beta, int lda, int ldb, int ldc);

// bf16_gemm on inputs already rounded by to_bf16, stored packed (a is m x k, or k x m when
// trans_a; b is k x n, or n x k when trans_b): for an operand that several GEMMs share.
void bf16_gemm_rounded(float* c, const uint16_t* a, const uint16_t* b, int m, int n, int k,
                       bool trans_a, bool trans_b, float alpha, float beta, int ldc);

}  // namespace gattn
