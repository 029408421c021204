// Attention for a few query rows per sequence against many keys (a decode step, or the first
// rows of a tiny batch): one pass over each kv head's keys and one over its values, shared by the
// query heads of its group, with no BLAS call per tile. attention_forward() sends such shapes here.
#pragma once
#include "ops/attention.h"

namespace gattn {

inline constexpr int kFewQueryRows = 4;  // attention_forward() comes here for q_len up to this

// The same result as attention_forward's tiled path (out and lse), for s.q_len <= kFewQueryRows.
// KV: T, or uint16_t with T = float (a bf16 KV cache: each value widened as it is read).
template <typename T, typename KV>
void attention_forward_few_queries(T* out, T* lse, const T* q, const KV* k, const KV* v,
                                   const AttentionShape& s);

}  // namespace gattn
