#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "model/blocks/make_block.h"
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
      layers_(layer_configs(config)),
      rope_(make_rope_table<float>(config.rotary_dim(), config.rope_theta,
                                   config.max_position_embeddings, config.rope_scaling)),
      values_(std::move(values)) {
  if (values_.empty()) values_.assign(layout_.total(), 0.0f);
  GATTN_ASSERT(int64_t(values_.size()) == layout_.total(), values_.size(),
               " values given for a layout of ", layout_.total());
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    blocks_.push_back(make_attention_block(layers_[l].attention, layout_.layers[l].attention, l));
    blocks_.push_back(make_mlp_block(layers_[l].mlp, layout_.layers[l].mlp));
  }
}

void Weights::init(uint64_t seed) {
  init_params(values_.data(), layout_, seed, config_.initializer_range);
  if (config_.gate.identity_init) double_output_projections();
}

// A gate with scores 0.5 halves what reaches o_proj; twice the weights undo it exactly.
void Weights::double_output_projections() {
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    float* w = values_.data() + layout_.layers[l].attention.o_proj;
    const int64_t count = int64_t(layers_[l].attention.hidden) * layers_[l].attention.q_dim();
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
