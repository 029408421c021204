// Seedable initialisation: each tensor is drawn from its own counter-based stream keyed by
// (seed, tensor name), so adding a tensor (a gate) leaves every other tensor's values unchanged.
#pragma once
#include <cstdint>

#include "model/layout.h"

namespace gattn {

// Matrices and embeddings ~ normal(0, std), norm weights 1, input-independent gate logits 0.
void init_params(float* params, const ParamLayout& layout, uint64_t seed, double std);

// The i-th standard normal draw of the stream keyed by (seed, name).
double normal_draw(uint64_t seed, const std::string& name, int64_t i);

}  // namespace gattn
