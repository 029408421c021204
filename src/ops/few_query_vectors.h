// The query vectors of a few-query attention pass (ops/attention_decode.cpp) as its vector kernels
// take them (ops/attention_few_avx2.h, ops/avx512_kernels.h). A struct only: the AVX-512 files
// include it, so no inline functions here.
#pragma once

namespace gattn {

struct FewQueryVectors {
  const float* const* queries;  // vector u's d values
  const int* kv_offset;         // where vector u's kv head starts within a cached row
  int count;                    // vectors
  int group;                    // runs of `group` consecutive vectors share a kv head
  int d;                        // the head size, a multiple of 16
};

}  // namespace gattn
