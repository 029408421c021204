// A model's read-only side: config, parameter layout, each layer's config and blocks, the RoPE
// table and the parameters in typed storage. Passes never write it, so several users (a trainer
// and its evaluation, server requests) can share one Weights; only the optimizer (or a loader)
// changes the values, between passes.
//
// Storage (ops/weight_view.h): f32 keeps every parameter in one 64-byte aligned float buffer in
// layout order (training's master weights: the optimizer, gradients and checkpoints index it by
// layout offset). bf16 (inference) keeps every matrix in bfloat16 only, at the same layout
// offsets, and the 1-D tensors (norm weights, gate logits) in a small float buffer holding their
// bf16-rounded values: 2 bytes per parameter, no fp32 copy. Weight matrices are read through
// matrix() (a view with its dtype); at() gives floats of tensors stored as floats.
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
#include "ops/weight_view.h"
#include "util/aligned.h"
#include "util/zero_pages.h"

namespace gattn {

class Weights {
 public:
  // Parameters zero: init() or load them (store()).
  explicit Weights(const Config& config, WeightDtype storage = WeightDtype::f32);
  Weights(const Config& config, AlignedFloats values);  // f32 values in layout order
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

  // How the matrices are stored, and how tensor `index` of the layout is.
  WeightDtype storage() const { return storage_; }
  WeightDtype dtype_of(size_t tensor_index) const;
  int64_t size() const { return layout_.total(); }  // parameters
  int64_t parameter_bytes() const;  // what the storage holds in memory (not the mapped ranges)

  // rows x cols values from layout offset `offset` (one matrix, or several adjacent ones of the
  // same width: q|k|v|gate), in the storage's matrix dtype.
  WeightView matrix(int64_t offset, int64_t rows, int64_t cols) const;
  // Floats at `offset` of a tensor stored as floats (every tensor of f32 storage; the elementwise
  // ones of bf16 storage). A bf16 matrix is an InternalError naming it: read it through matrix().
  const float* at(int64_t offset) const;
  // Writes count values at `offset` (within one tensor), rounded to the tensor's dtype: loaders.
  void store(int64_t offset, const float* values, int64_t count);

  // The f32 buffer, in layout order (training, checkpoints): an InternalError for bf16 storage.
  const float* data() const { return f32_values().data(); }
  float* data() { return f32_values().data(); }
  const AlignedFloats& values() const { return f32_values(); }
  AlignedFloats& values() { return f32_values(); }
  // Hands the buffer over (e.g. to Weights of the same layout with a longer context).
  AlignedFloats release() &&;

  void init(uint64_t seed);
  // Copies every tensor `source` has (same name and shape; an Error otherwise) and keeps this
  // model's values for the rest: a pretrained model to fine-tune, a gate retrofitted onto it
  // (with init "identity", o_proj is doubled when the gate is new). Returns the names not found.
  std::vector<std::string> init_from(const Weights& source);

  // f32 storage -> bf16 storage: every value rounded to bfloat16 (nearest even), the f32 buffer
  // freed. Decode steps read the bf16 matrices (half the bytes of f32); prefill runs them on
  // the CPU's bf16 GEMM (GemmPrecision::bf16) or on fp32 panels widened from them
  // (ops/typed_linear.h). Loaders write bf16 storage directly (no f32 copy on the way).
  void convert_to_bf16();
  // The bf16 values of every parameter in layout order (null unless bf16 storage); a mapped
  // range's values are not there (zero) but in the file: read matrices through matrix().
  const uint16_t* bf16_data() const { return bf16_.empty() ? nullptr : bf16_.data(); }

  // bf16 storage: `count` values from layout offset `offset` are read from `data` (a checkpoint
  // mapped from disk, which `owner` keeps alive) instead of the storage, whose pages there stay
  // untouched: a model larger than memory decodes with the kernel paging those values in. A
  // matrix read must lie within one range (or go through matrix_part()). Loaders map whole
  // tensors, before any pass.
  void map_bf16(int64_t offset, int64_t count, const uint16_t* data,
                std::shared_ptr<const void> owner);
  // The same for a matrix of `rows` x `cols` values stored as `dtype` (any: a GGUF file's f32 or
  // block-format tensor read in place, row r at data + r * weight_row_bytes(dtype, cols)).
  void map_matrix(int64_t offset, int64_t rows, int64_t cols, WeightDtype dtype, const void* data,
                  std::shared_ptr<const void> owner);
  int64_t mapped_bytes() const;  // of the parameters read from mapped files, as stored there
  // The dtypes of the mapped matrices and the values each holds: "q4_K 61%, q6_K 39%" ("" if none).
  std::string mapped_dtypes() const;
  // When the mapped ranges will not all stay in memory (the loader decides): no read-ahead
  // around faults in them, and will_need() asks the kernel to read [offset, offset + count) in
  // now, in large reads (a pass about to run an expert its router chose). Without paging
  // will_need() does nothing (asking costs a walk of the pages, ~15% of a decode step).
  void page_mapped_ranges();
  bool paging() const { return paging_; }
  void will_need(int64_t offset, int64_t count) const;
  // The first rows of matrix(offset, rows, cols) that one storage holds (at least one row): a
  // fused q|k|v view whose tensors a GGUF file stores apart, or in different dtypes, is read part
  // by part (model/pass.h project()).
  WeightView matrix_part(int64_t offset, int64_t rows, int64_t cols) const;

 private:
  AlignedFloats& f32_values();
  const AlignedFloats& f32_values() const;
  size_t tensor_at(int64_t offset) const;  // the layout tensor holding `offset`
  void place_float_tensors();              // bf16 storage: where each 1-D tensor's floats go
  // Everything but the storage's buffers.
  Weights(const Config& config, WeightDtype storage, AlignedFloats values);
  void double_output_projections();

  Config config_;
  ParamLayout layout_;
  std::vector<LayerConfig> layers_;
  std::vector<std::unique_ptr<Block>> blocks_;
  RopeTable<float> rope_;
  WeightDtype storage_ = WeightDtype::f32;
  AlignedFloats values_;              // f32 storage: every parameter
  ZeroPages<uint16_t> bf16_;          // bf16 storage: every parameter (untouched where mapped)
  AlignedFloats floats_;              // bf16 storage: the 1-D tensors, packed
  std::vector<int64_t> float_index_;  // per layout tensor: its start in floats_, or -1
  struct MappedRange {
    int64_t offset, count;  // layout offset and values
    int64_t cols;           // values a stored row
    WeightDtype dtype;
    const uint8_t* data;
    int64_t bytes() const { return count / cols * weight_row_bytes(dtype, cols); }
  };
  std::vector<MappedRange> mapped_;  // by offset, disjoint
  bool paging_ = false;
  std::vector<std::shared_ptr<const void>> mapping_owners_;
  // The range holding `offset` (null: not mapped); `count` values from there must lie within it.
  const MappedRange* mapped_at(int64_t offset, int64_t count) const;
  // The stored bytes of values [offset, ...) of a range, offset at the start of a row.
  const uint8_t* mapped_data(const MappedRange& r, int64_t offset) const;
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
  void swap(Gradients& other) noexcept { values_.swap(other.values_); }

 private:
  AlignedFloats values_;
};

}  // namespace gattn
