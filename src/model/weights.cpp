#include "model/weights.h"

#include "model/init.h"
#include "util/error.h"

namespace gattn {

Weights::Weights(const Config& config) : Weights(config, AlignedFloats()) {}

Weights::Weights(const Config& config, AlignedFloats values)
    : config_(config),
      layout_(config),
      rope_(make_rope_table<float>(config.rotary_dim(), config.rope_theta,
                                   config.max_position_embeddings, config.rope_scaling)),
      // 16 floats = 64 bytes: every projection row starts on a cache line, GEMM packing is faster
      projection_stride_((layout_.attn_proj_rows + 15) / 16 * 16),
      values_(std::move(values)) {
  if (values_.empty()) values_.assign(layout_.total(), 0.0f);
  if (int64_t(values_.size()) != layout_.total())
    fail("weights: ", values_.size(), " values given for a layout of ", layout_.total());
  const GateSite gate = gate_site(config);
  for (int l = 0; l < config.num_hidden_layers; ++l)
    layers_.push_back({.spec = config.layer(l), .gate = gate, .offsets = layout_.layers[l]});
}

void Weights::init(uint64_t seed) {
  init_params(values_.data(), layout_, seed, config_.initializer_range);
}

}  // namespace gattn
