#include "model/flops.h"

#include "model/layer_config.h"
#include "model/layout.h"

namespace gattn {

int64_t idle_expert_parameters(const Config& c) {
  int64_t idle = 0;
  for (const LayerConfig& l : layer_configs(c))
    if (l.mlp.kind == MlpKind::moe)
      idle += int64_t(l.mlp.moe.experts - l.mlp.moe.top_k) * 3 * l.mlp.moe.expert_intermediate *
              l.mlp.hidden;
  return idle;
}

int64_t active_parameters(const Config& c) {
  const int64_t embedding = int64_t(c.vocab_size) * c.hidden_size;
  // Tied: the matrix is both the lookup (free) and the LM head (a GEMM), counted once.
  return ParamLayout(c).total() - (c.tie_word_embeddings ? 0 : embedding) -
         idle_expert_parameters(c);
}

double training_flops_per_token(const Config& c, int seq_len) {
  const int64_t gemm_weights = active_parameters(c);
  return 6.0 * double(gemm_weights) +
         6.0 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * double(seq_len);
}

}  // namespace gattn
