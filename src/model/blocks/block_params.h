// Each block kind adds its parameters to the layout (names, shapes, initialisation) and says where
// they sit; defined beside the block's forward and backward (model/blocks/<kind>.cpp).
#pragma once
#include <string>

#include "model/layer_config.h"
#include "model/layout.h"

namespace gattn {

// prefix: "model.layers.<l>."
AttentionParams add_full_attention_params(ParamLayout& layout, const AttentionConfig& c,
                                          const std::string& prefix);
AttentionParams add_gated_delta_net_params(ParamLayout& layout, const AttentionConfig& c,
                                           const std::string& prefix);
MlpParams add_dense_mlp_params(ParamLayout& layout, const MlpConfig& c, const std::string& prefix);
MlpParams add_moe_mlp_params(ParamLayout& layout, const MlpConfig& c, const std::string& prefix);

}  // namespace gattn
