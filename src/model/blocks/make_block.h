// The block of each kind: the one place that maps a layer config's kinds to block classes.
#pragma once
#include <memory>

#include "model/block.h"
#include "model/layer_config.h"
#include "model/layout.h"

namespace gattn {

std::unique_ptr<Block> make_attention_block(const AttentionConfig& c, const AttentionParams& p,
                                            int layer);
std::unique_ptr<Block> make_mlp_block(const MlpConfig& c, const MlpParams& p, int layer);

}  // namespace gattn
