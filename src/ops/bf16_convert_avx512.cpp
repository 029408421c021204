// Compiled with AVX-512 flags (CMake's gattn_avx512): nothing here may be shared with baseline
// files (no inline functions or templates of other headers), since the linker keeps one copy.
#include <immintrin.h>

#include "ops/avx512_kernels.h"

namespace gattn::avx512 {

int to_bf16_bits(const float* x, int n, uint16_t* out) {
  int c = 0;
  for (; c + 32 <= n; c += 32) {
    const __m512bh pair = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + c + 16), _mm512_loadu_ps(x + c));
    _mm512_storeu_si512(out + c, __m512i(pair));
  }
  return c;
}

}  // namespace gattn::avx512
