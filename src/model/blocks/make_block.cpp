#include "model/blocks/make_block.h"

#include "model/blocks/dense_mlp.h"
#include "model/blocks/full_attention.h"
#include "model/blocks/gated_delta_net.h"
#include "model/blocks/moe_mlp.h"

namespace gattn {

std::unique_ptr<Block> make_attention_block(const AttentionConfig& c, const AttentionParams& p,
                                            int layer) {
  switch (c.kind) {
    case AttentionKind::full:
      return std::make_unique<FullAttention>(c, p, layer);
    case AttentionKind::linear:
      return std::make_unique<GatedDeltaNet>(c, p, layer);
  }
  return nullptr;
}

std::unique_ptr<Block> make_mlp_block(const MlpConfig& c, const MlpParams& p, int layer) {
  switch (c.kind) {
    case MlpKind::dense:
      return std::make_unique<DenseMlp>(c, p, layer);
    case MlpKind::moe:
      return std::make_unique<MoeMlp>(c, p, layer);
  }
  return nullptr;
}

}  // namespace gattn
