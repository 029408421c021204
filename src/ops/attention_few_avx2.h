// The few-query attention's values pass over a cache's rows (ops/attention_decode.cpp) on AVX2
// with FMA, fp32 or bf16 values: the portable loop's arithmetic exactly, each value row loaded
// once for both query vectors of a GQA pair. (Its scores pass is the portable one: ops/dot's
// dot4.) Defined where ops/dot.h defines GATTN_DOT_AVX2. (ops/attention_few_avx2.cpp)
#pragma once
#include <cstdint>

#include "ops/dot.h"
#include "ops/few_query_vectors.h"

#ifdef GATTN_DOT_AVX2
namespace gattn::avx2 {

// acc[u * d + c] += sum_j p[u * ld + j] v[j][kv_offset[u] + c] for rows j < n.
void few_query_values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                      const float* v, int64_t ld_v, int n);
void few_query_values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                      const uint16_t* v, int64_t ld_v, int n);

}  // namespace gattn::avx2
#endif
