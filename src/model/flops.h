// The FLOP count gattn bench reports rates with (PaLM's, Chowdhery et al. 2022, appendix B):
// 6 N per token for the weight GEMMs of a training step (N = parameters with the LM head but
// without the embedding lookup) plus 6 L H d T for causal attention; a forward pass is a third.
#pragma once
#include "model/config.h"

namespace gattn {

double training_flops_per_token(const Config& config, int seq_len);

}  // namespace gattn
