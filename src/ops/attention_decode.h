// Attention for a few query rows per sequence against many keys (a decode step, or the first
// rows of a tiny batch): one pass over each kv head's keys and one over its values, shared by the
// query heads of its group, with no BLAS call per tile. attention_forward() sends such shapes here.
#pragma once
#include "ops/attention.h"

namespace gattn {

// attention_forward() comes here for q_len up to this: a short prompt chunk beside decoding slots
// reads the cached keys and values once for all its rows (the tiled path packs and transposes
// every row of them per call: at position ~4,000, 8 rows cost 16x one row there).
inline constexpr int kFewQueryRows = 16;

// The same result as attention_forward's tiled path (out and lse), for s.q_len <= kFewQueryRows.
// KV: T, or uint16_t with T = float (a bf16 KV cache: each value widened as it is read).
template <typename T, typename KV>
void attention_forward_few_queries(T* out, T* lse, const T* q, const KV* k, const KV* v,
                                   const AttentionShape& s);

}  // namespace gattn
