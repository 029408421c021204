#include "model/flops.h"

#include "model/layout.h"

namespace gattn {

double training_flops_per_token(const Config& c, int seq_len) {
  const int64_t embedding = int64_t(c.vocab_size) * c.hidden_size;
  // Tied: the matrix is both the lookup (free) and the LM head (a GEMM), counted once.
  const int64_t gemm_weights = ParamLayout(c).total() - (c.tie_word_embeddings ? 0 : embedding);
  return 6.0 * double(gemm_weights) +
         6.0 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * double(seq_len);
}

}  // namespace gattn
