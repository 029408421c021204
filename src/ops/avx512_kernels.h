// gattn's AVX-512 kernels, each compiled alone with AVX-512 flags (CMake's gattn_avx512 object
// library) while the rest of the build targets the baseline: call them only where
// avx512_bf16_kernels_in_use() (util/cpu_isa.h). Declarations only: no AVX-512 types or
// intrinsics here, so that baseline files may include it.
#pragma once
#include <cstdint>

#include "ops/few_query_vectors.h"
#include "ops/weight_view.h"

namespace gattn::avx512 {

// bf16_tile_gemm (ops/bf16_tile.h) on vdpbf16ps; a_words and b_words are its packing scratch,
// sized by bf16_tile_detail::tile_gemm's rule. (ops/bf16_tile_avx512.cpp)
void bf16_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                    bool trans_b, float alpha, float beta, int lda, int ldb, int ldc,
                    uint32_t* a_words, uint32_t* b_words);

// out[i] = the bf16 bits of x[i] as to_bf16 (ops/bf16_gemm.h) rounds them, for the first
// n - n % 32 values (vcvtne2ps2bf16); returns that count, the caller converts the rest.
// (ops/bf16_convert_avx512.cpp)
int to_bf16_bits(const float* x, int n, uint16_t* out);

// The few-query attention's two passes over a cache's rows (ops/attention_decode.cpp) for the
// query vectors of one sequence and a range of kv heads, fp32 or bf16 keys and values (each
// value widened exactly as it is read). (ops/attention_few_avx512.cpp)
// out[u * ld + j] = scale * (query u . key row j) for rows j < n (k: row 0, rows ld_k apart).
void few_query_scores(float* out, int64_t ld, const FewQueryVectors& qv, const float* k,
                      int64_t ld_k, int n, float scale);
void few_query_scores(float* out, int64_t ld, const FewQueryVectors& qv, const uint16_t* k,
                      int64_t ld_k, int n, float scale);
// acc[u * d + c] += sum_j p[u * ld + j] v[j][kv_offset[u] + c] for rows j < n.
void few_query_values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                      const float* v, int64_t ld_v, int n);
void few_query_values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                      const uint16_t* v, int64_t ld_v, int n);

// p[j] = exp(p[j] - max) over n scores (n >= 1), fast_exp's bits; returns their sum, added in
// the order of attention_decode.cpp's exp_shifted, and sets *max: that function's results, bit for
// bit (but the sign of a zero max, which changes no result).
float few_query_exp_shifted(float* p, int n, float* max);

// quant_dot (ops/quant_dot.h) on AVX-512 BW and VNNI: where the CPU has avx512_vnni.
// (ops/quant_dot_avx512.cpp)
void quant_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
               int64_t x_stride, int nx, float* out, int64_t ld_out);

// ops/quant_tile.h's products (ops/quant_tile_avx512.cpp).
void quant_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                    const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out);

}  // namespace gattn::avx512
