// The few-query attention's scores and values passes over a cache's rows
// (ops/attention_decode.cpp) on AVX2 with FMA, fp32 or bf16 rows: the portable loops' arithmetic
// exactly (the scores as ops/dot's dot4 and dot make them), each row loaded once for both query
// vectors of a GQA pair. Defined where ops/dot.h defines GATTN_DOT_AVX2.
// (ops/attention_few_avx2.cpp)
#pragma once
#include <cstdint>

#include "ops/dot.h"
#include "ops/few_query_vectors.h"

#ifdef GATTN_DOT_AVX2
namespace gattn::avx2 {

// out[u * ld + j] = scale * (query u . k[j][kv_offset[u] ..]) for rows j < n.
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

}  // namespace gattn::avx2
#endif
