// A model's read-only side: config, parameter layout, each layer's config and blocks, the RoPE
// table and one 64-byte aligned buffer holding every parameter in layout order. Passes never write
// it, so several users (a trainer and its evaluation, server requests) can share one Weights; only
// the optimizer (or a loader) changes the values, between passes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/block.h"
#include "model/config.h"
#include "model/layer_config.h"
#include "model/layout.h"
#include "ops/rope.h"
#include "util/aligned.h"

namespace gattn {

class Weights {
 public:
  explicit Weights(const Config& config);               // parameters zero: init() or load them
  Weights(const Config& config, AlignedFloats values);  // values in layout order
  // Passes hold a reference: never copied or moved (a 1.7B model is 7 GB).
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;

  const Config& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  const LayerConfig& layer(int l) const { return layers_[l]; }
  // The model's blocks in pass order: layer l's attention block is block 2l, its MLP block 2l + 1.
  int blocks() const { return int(blocks_.size()); }
  const Block& block(int i) const { return *blocks_[i]; }
  const RopeTable<float>& rope() const { return rope_; }

  const float* data() const { return values_.data(); }
  float* data() { return values_.data(); }
  int64_t size() const { return int64_t(values_.size()); }
  const float* at(int64_t offset) const { return values_.data() + offset; }
  const AlignedFloats& values() const { return values_; }
  AlignedFloats& values() { return values_; }
  // Hands the buffer over (e.g. to Weights of the same layout with a longer context).
  AlignedFloats release() && { return std::move(values_); }

  void init(uint64_t seed);
  // Copies every tensor `source` has (same name and shape; an Error otherwise) and keeps this
  // model's values for the rest: a pretrained model to fine-tune, a gate retrofitted onto it
  // (with init "identity", o_proj is doubled when the gate is new). Returns the names not found.
  std::vector<std::string> init_from(const Weights& source);

  // bf16 weights for inference: rounds every value to bfloat16 (nearest even) and keeps a bf16
  // copy beside the fp32 buffer. Decode steps (at most kSmallBatchRows rows) then read the
  // copy, half the bytes; prefill reads the fp32 buffer, which holds the same values, so both
  // compute one function. Training never calls it.
  void round_to_bf16_for_inference();
  const uint16_t* bf16_data() const { return bf16_.empty() ? nullptr : bf16_.data(); }

 private:
  void double_output_projections();

  Config config_;
  ParamLayout layout_;
  std::vector<LayerConfig> layers_;
  std::vector<std::unique_ptr<Block>> blocks_;
  RopeTable<float> rope_;
  AlignedFloats values_;
  std::vector<uint16_t, AlignedAllocator<uint16_t>> bf16_;  // empty unless rounded for inference
};

// One float per parameter in layout order: what a backward pass accumulates into.
class Gradients {
 public:
  explicit Gradients(const ParamLayout& layout) : Gradients(layout.total()) {}
  explicit Gradients(int64_t count) : values_(count, 0.0f) {}
  float* at(int64_t offset) { return values_.data() + offset; }
  const float* data() const { return values_.data(); }
  float* data() { return values_.data(); }
  int64_t size() const { return int64_t(values_.size()); }
  const AlignedFloats& values() const { return values_; }
  void zero() { std::fill(values_.begin(), values_.end(), 0.0f); }

 private:
  AlignedFloats values_;
};

}  // namespace gattn
