#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "model/init.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {

namespace {
std::string dims(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}
}  // namespace

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
  GATTN_ASSERT(int64_t(values_.size()) == layout_.total(), values_.size(),
               " values given for a layout of ", layout_.total());
  const GateSite gate = gate_site(config);
  for (int l = 0; l < config.num_hidden_layers; ++l)
    layers_.push_back({.spec = config.layer(l), .gate = gate, .offsets = layout_.layers[l]});
}

void Weights::init(uint64_t seed) {
  init_params(values_.data(), layout_, seed, config_.initializer_range);
  if (config_.gate.identity_init) double_output_projections();
}

// A gate with scores 0.5 halves what reaches o_proj; twice the weights undo it exactly.
void Weights::double_output_projections() {
  for (const LayerPlan& layer : layers_) {
    float* w = values_.data() + layer.offsets.o_proj;
    const int64_t count = int64_t(config_.hidden_size) * config_.q_dim();
    for (int64_t i = 0; i < count; ++i) w[i] *= 2;
  }
}

std::vector<std::string> Weights::init_from(const Weights& source) {
  std::vector<std::string> fresh;
  bool new_gate = false;
  for (const TensorSpec& t : layout_.tensors()) {
    const TensorSpec* s = source.layout().find(t.name);
    if (!s) {
      fresh.push_back(t.name);
      new_gate = new_gate || t.component == "gate";
      continue;
    }
    if (s->shape != t.shape)
      fail("--init-from: tensor '", t.name, "' has shape ", dims(s->shape), " in the source but ",
           dims(t.shape), " in this model");
    std::copy_n(source.at(s->offset), t.numel, values_.data() + t.offset);
  }
  if (new_gate && config_.gate.identity_init) double_output_projections();
  return fresh;
}

}  // namespace gattn

namespace gattn {

void Weights::round_to_bf16_for_inference() {
  bf16_.resize(values_.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(values_.size()); ++i) {
    values_[i] = round_to_bf16(values_[i]);
    uint32_t bits;
    std::memcpy(&bits, &values_[i], 4);
    bf16_[i] = uint16_t(bits >> 16);
  }
}

}  // namespace gattn
