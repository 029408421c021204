// gattn's AVX-512 kernels, each compiled alone with AVX-512 flags (CMake's gattn_avx512 object
// library) while the rest of the build targets the baseline: call them only where
// avx512_bf16_kernels_in_use() (util/cpu_isa.h). Declarations only: no AVX-512 types or
// intrinsics here, so that baseline files may include it.
#pragma once
#include <cstdint>

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

}  // namespace gattn::avx512
