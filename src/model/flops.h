// The FLOP count gattn bench reports rates with (PaLM's, Chowdhery et al. 2022, appendix B):
// 6 N per token for the weight GEMMs of a training step (N = parameters with the LM head but
// without the embedding lookup; of a mixture of experts, the k experts a token runs) plus 6 L H d T
// for causal attention; a forward pass is a third.
#pragma once
#include "model/config.h"

namespace gattn {

double training_flops_per_token(const Config& config, int seq_len);

// The expert weights a token does not run: experts - k of every mixture-of-experts layer's.
int64_t idle_expert_parameters(const Config& config);
// The weights a token runs: every parameter but the idle experts' and the input embedding (a
// lookup; with tied embeddings the matrix counts once, as the LM head).
int64_t active_parameters(const Config& config);

}  // namespace gattn
