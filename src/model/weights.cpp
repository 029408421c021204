#include "model/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "model/blocks/make_block.h"
#include "model/init.h"
#include "ops/bf16_bits.h"
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

Weights::Weights(const Config& config, WeightDtype storage)
    : Weights(config, storage, AlignedFloats()) {
  if (storage == WeightDtype::f32) {
    values_.assign(layout_.total(), 0.0f);
  } else {
    bf16_ = ZeroPages<uint16_t>(size_t(layout_.total()));
    place_float_tensors();
  }
}

Weights::Weights(const Config& config, AlignedFloats values)
    : Weights(config, WeightDtype::f32, std::move(values)) {
  GATTN_ASSERT(int64_t(values_.size()) == layout_.total(), values_.size(),
               " values given for a layout of ", layout_.total());
}

Weights::Weights(const Config& config, WeightDtype storage, AlignedFloats values)
    : config_(config),
      layout_(config),
      layers_(layer_configs(config)),
      rope_(make_rope_table<float>(config.rotary_dim(), config.rope_theta,
                                   config.max_position_embeddings, config.rope_scaling)),
      storage_(storage),
      values_(std::move(values)) {
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    blocks_.push_back(make_attention_block(layers_[l].attention, layout_.layers[l].attention, l));
    blocks_.push_back(make_mlp_block(layers_[l].mlp, layout_.layers[l].mlp, l));
  }
}

// Tensors read by elementwise ops (norms, gate logits, convolution taps) as floats: in floats_.
void Weights::place_float_tensors() {
  float_index_.assign(layout_.tensors().size(), -1);
  int64_t floats = 0;
  for (size_t i = 0; i < layout_.tensors().size(); ++i) {
    const TensorSpec& t = layout_.tensors()[i];
    if (!t.elementwise) continue;
    float_index_[i] = floats;
    floats += t.numel;
  }
  floats_.assign(floats, 0.0f);
}

WeightDtype Weights::dtype_of(size_t tensor_index) const {
  if (storage_ == WeightDtype::f32 || float_index_[tensor_index] >= 0) return WeightDtype::f32;
  const TensorSpec& t = layout_.tensors()[tensor_index];
  if (const MappedRange* r = mapped_.empty() ? nullptr : mapped_at(t.offset, 1)) return r->dtype;
  return storage_;
}

int64_t Weights::parameter_bytes() const {
  int64_t untouched = 0;  // the storage's values the mapped ranges stand in for
  for (const MappedRange& r : mapped_) untouched += r.count * int64_t(sizeof(uint16_t));
  return int64_t(values_.size() * sizeof(float) + bf16_.size() * sizeof(uint16_t) +
                 floats_.size() * sizeof(float)) -
         untouched;
}

int64_t Weights::mapped_bytes() const {
  int64_t bytes = 0;
  for (const MappedRange& r : mapped_) bytes += r.bytes();
  return bytes;
}

std::string Weights::mapped_dtypes() const {
  std::vector<std::pair<WeightDtype, int64_t>> counts;
  int64_t total = 0;
  for (const MappedRange& r : mapped_) {
    auto at = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == r.dtype; });
    if (at == counts.end()) at = counts.insert(counts.end(), {r.dtype, 0});
    at->second += r.count;
    total += r.count;
  }
  std::sort(counts.begin(), counts.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [dtype, count] : counts)
    text += (text.empty() ? "" : ", ") + std::string(weight_dtype_name(dtype)) + " " +
            std::to_string(int(std::lround(100.0 * double(count) / double(total)))) + "%";
  return text;
}

void Weights::map_bf16(int64_t offset, int64_t count, const uint16_t* data,
                       std::shared_ptr<const void> owner) {
  map_matrix(offset, 1, count, WeightDtype::bf16, data, std::move(owner));
}

void Weights::map_matrix(int64_t offset, int64_t rows, int64_t cols, WeightDtype dtype,
                         const void* data, std::shared_ptr<const void> owner) {
  GATTN_ASSERT(storage_ == WeightDtype::bf16, "only bf16 storage reads mapped matrices");
  const int64_t count = rows * cols;
  GATTN_ASSERT(offset >= 0 && rows > 0 && cols > 0 && offset + count <= layout_.total(), count,
               " mapped values at ", offset, " are outside the parameters");
  const auto at = std::lower_bound(mapped_.begin(), mapped_.end(), offset,
                                   [](const MappedRange& r, int64_t o) { return r.offset < o; });
  GATTN_ASSERT((at == mapped_.end() || offset + count <= at->offset) &&
                   (at == mapped_.begin() || (at - 1)->offset + (at - 1)->count <= offset),
               "mapped ranges overlap at ", offset);
  mapped_.insert(at, {offset, count, cols, dtype, static_cast<const uint8_t*>(data)});
  if (owner && std::find(mapping_owners_.begin(), mapping_owners_.end(), owner) ==
                   mapping_owners_.end())  // each owner kept once (a file maps many tensors)
    mapping_owners_.push_back(std::move(owner));
}

void Weights::page_mapped_ranges() {
  // What a pass reads of them is chosen per token (experts): no speculative reading around a
  // fault, which for experts of a few MB reads neighbours no token chose; will_need() reads what
  // is chosen, in large reads.
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  for (const MappedRange& r : mapped_) {
    const uintptr_t lo = (uintptr_t(r.data) + page - 1) / page * page,
                    hi = uintptr_t(r.data + r.bytes()) / page * page;
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_RANDOM);
  }
  paging_ = true;
}

void Weights::will_need(int64_t offset, int64_t count) const {
  if (!paging_) return;
  const MappedRange* r = mapped_at(offset, count);
  if (!r) return;
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uint8_t* data = mapped_data(*r, offset);
  const int64_t bytes = is_block_format(r->dtype)
                            ? (count + r->cols - 1) / r->cols * weight_row_bytes(r->dtype, r->cols)
                            : count * weight_block_bytes(r->dtype);
  const uintptr_t lo = uintptr_t(data) / page * page, hi = uintptr_t(data + bytes);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_WILLNEED);
}

const Weights::MappedRange* Weights::mapped_at(int64_t offset, int64_t count) const {
  const auto after = std::upper_bound(mapped_.begin(), mapped_.end(), offset,
                                      [](int64_t o, const MappedRange& r) { return o < r.offset; });
  if (after == mapped_.begin()) return nullptr;
  const MappedRange& r = *(after - 1);
  if (offset >= r.offset + r.count) return nullptr;
  GATTN_ASSERT(offset + count <= r.offset + r.count, count, " values at ", offset,
               " run past a mapped range of the checkpoint");
  return &r;
}

const uint8_t* Weights::mapped_data(const MappedRange& r, int64_t offset) const {
  const int64_t values = offset - r.offset;
  if (!is_block_format(r.dtype)) return r.data + values * weight_block_bytes(r.dtype);
  GATTN_ASSERT(values % r.cols == 0, "a read of ", weight_dtype_name(r.dtype),
               " values starts inside a row");
  return r.data + values / r.cols * weight_row_bytes(r.dtype, r.cols);
}

size_t Weights::tensor_at(int64_t offset) const {
  const std::vector<TensorSpec>& t = layout_.tensors();
  const auto after = std::upper_bound(t.begin(), t.end(), offset,
                                      [](int64_t o, const TensorSpec& s) { return o < s.offset; });
  GATTN_ASSERT(after != t.begin() && offset < layout_.total(), "offset ", offset,
               " is outside the parameters");
  return size_t(after - t.begin()) - 1;
}

WeightView Weights::matrix(int64_t offset, int64_t rows, int64_t cols) const {
  GATTN_ASSERT(offset >= 0 && offset + rows * cols <= layout_.total(), "matrix [", rows, ", ", cols,
               "] at ", offset, " is outside the parameters");
  if (storage_ == WeightDtype::f32)
    return {.dtype = WeightDtype::f32, .data = values_.data() + offset, .rows = rows, .cols = cols};
  const MappedRange* r = mapped_.empty() ? nullptr : mapped_at(offset, rows * cols);
  if (!r) return {.dtype = storage_, .data = bf16_.data() + offset, .rows = rows, .cols = cols};
  GATTN_ASSERT(!is_block_format(r->dtype) || r->cols == cols, "a ", weight_dtype_name(r->dtype),
               " matrix of rows of ", r->cols, " values read as rows of ", cols);
  return {.dtype = r->dtype, .data = mapped_data(*r, offset), .rows = rows, .cols = cols};
}

WeightView Weights::matrix_part(int64_t offset, int64_t rows, int64_t cols) const {
  if (storage_ == WeightDtype::f32 || mapped_.empty()) return matrix(offset, rows, cols);
  const auto after = std::upper_bound(mapped_.begin(), mapped_.end(), offset,
                                      [](int64_t o, const MappedRange& r) { return o < r.offset; });
  int64_t end = layout_.total();  // where this storage ends: the range's end, or the next's start
  if (after != mapped_.begin() && offset < (after - 1)->offset + (after - 1)->count)
    end = (after - 1)->offset + (after - 1)->count;
  else if (after != mapped_.end())
    end = after->offset;
  const int64_t part = std::min(rows, (end - offset) / cols);
  GATTN_ASSERT(part > 0, "a matrix row at ", offset, " runs across two storages");
  return matrix(offset, part, cols);
}

const float* Weights::at(int64_t offset) const {
  if (storage_ == WeightDtype::f32) return values_.data() + offset;
  const size_t i = tensor_at(offset);
  const TensorSpec& t = layout_.tensors()[i];
  GATTN_ASSERT(float_index_[i] >= 0, "tensor '", t.name, "' is stored as ",
               weight_dtype_name(storage_), ": read it through Weights::matrix()");
  return floats_.data() + float_index_[i] + (offset - t.offset);
}

void Weights::store(int64_t offset, const float* values, int64_t count) {
  if (storage_ == WeightDtype::f32) {
    std::copy_n(values, count, values_.data() + offset);
    return;
  }
  const size_t i = tensor_at(offset);
  const TensorSpec& t = layout_.tensors()[i];
  GATTN_ASSERT(offset + count <= t.offset + t.numel, count, " values at ", offset,
               " run past tensor '", t.name, "'");
  float* floats =
      float_index_[i] >= 0 ? floats_.data() + float_index_[i] + (offset - t.offset) : nullptr;
  for (int64_t j = 0; j < count; ++j) {
    bf16_[offset + j] = bf16_upper_bits(round_to_bf16(values[j]));
    if (floats) floats[j] = values[j];  // an elementwise tensor keeps its value (a 1 + w norm)
  }
}

AlignedFloats& Weights::f32_values() {
  GATTN_ASSERT(storage_ == WeightDtype::f32, "the f32 parameter buffer of a model stored as ",
               weight_dtype_name(storage_));
  return values_;
}
const AlignedFloats& Weights::f32_values() const {
  return const_cast<Weights*>(this)->f32_values();
}

AlignedFloats Weights::release() && { return std::move(f32_values()); }

void Weights::init(uint64_t seed) {
  init_params(f32_values().data(), layout_, seed, config_.initializer_range);
  if (config_.gate.identity_init) double_output_projections();
}

// A gate with scores 0.5 halves what reaches o_proj; twice the weights undo it exactly.
void Weights::double_output_projections() {
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    float* w = f32_values().data() + layout_.layers[l].attention.o_proj;
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
    std::copy_n(source.at(s->offset), t.numel, f32_values().data() + t.offset);
  }
  if (new_gate && config_.gate.identity_init) double_output_projections();
  return fresh;
}

}  // namespace gattn

namespace gattn {

void Weights::convert_to_bf16() {
  if (storage_ == WeightDtype::bf16) return;
  storage_ = WeightDtype::bf16;
  bf16_ = ZeroPages<uint16_t>(values_.size());
  place_float_tensors();
  for (size_t t = 0; t < layout_.tensors().size(); ++t) {
    const TensorSpec& spec = layout_.tensors()[t];
    if (float_index_[t] < 0) continue;
    for (int64_t j = 0; j < spec.numel; ++j)
      floats_[float_index_[t] + j] = values_[spec.offset + j];
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(values_.size()); ++i)
    bf16_[i] = bf16_upper_bits(round_to_bf16(values_[i]));
  AlignedFloats().swap(values_);
}

}  // namespace gattn
