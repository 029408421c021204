#include "model/value_head_order.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace gattn {

namespace {

// Copies `heads` blocks of `block` floats: destination head h from source head source(h).
template <typename SourceHead>
void move_heads(float* dst, const float* src, int heads, int64_t block, SourceHead source) {
  for (int h = 0; h < heads; ++h)
    std::copy_n(src + int64_t(source(h)) * block, block, dst + int64_t(h) * block);
}

// One Gated DeltaNet tensor of layer geometry `d` moved into the other order.
void reorder_tensor(const TensorSpec& t, const DeltaNetConfig& d, bool tiled, const float* src,
                    float* dst) {
  const int H = d.value_heads, K = d.key_heads, r = H / K;
  // The source head of destination head h.
  const auto source = [&](int h) { return tiled ? (h % K) * r + h / K : (h % r) * K + h / r; };
  const std::string& n = t.name;
  const int64_t cols = t.numel / t.shape[0], qk = 2 * int64_t(d.key_width());
  if (n.ends_with("in_proj_qkv.weight") || n.ends_with("conv1d.weight"))
    move_heads(dst + qk * cols, src + qk * cols, H, d.value_dim * cols, source);
  else if (n.ends_with("in_proj_z.weight"))
    move_heads(dst, src, H, d.value_dim * cols, source);
  else if (n.ends_with("in_proj_b.weight") || n.ends_with("in_proj_a.weight") ||
           n.ends_with("A_log") || n.ends_with("dt_bias"))
    move_heads(dst, src, H, t.shape.size() == 1 ? 1 : cols, source);
  else if (n.ends_with("out_proj.weight"))
    for (int64_t row = 0; row < t.shape[0]; ++row)
      move_heads(dst + row * cols, src + row * cols, H, d.value_dim, source);
}

}  // namespace

std::unique_ptr<Weights> reorder_value_heads(const Weights& model, bool tiled) {
  const Config& c = model.config();
  if (!c.has_linear_layers() || c.linear_value_heads_tiled == tiled ||
      c.linear_num_value_heads == c.linear_num_key_heads)
    return nullptr;
  GATTN_ASSERT(model.storage() == WeightDtype::f32, "reorder_value_heads of ",
               weight_dtype_name(model.storage()), " storage");
  Config reordered = c;
  reordered.linear_value_heads_tiled = tiled;
  AlignedFloats values(size_t(model.size()));
  std::copy_n(model.data(), model.size(), values.data());
  for (const TensorSpec& t : model.layout().tensors()) {
    const size_t at = t.name.find(".linear_attn.");
    if (at == std::string::npos) continue;
    const int l = std::stoi(t.name.substr(std::string("model.layers.").size()));
    reorder_tensor(t, model.layer(l).attention.delta_net, tiled, model.at(t.offset),
                   values.data() + t.offset);
  }
  return std::make_unique<Weights>(reordered, std::move(values));
}

}  // namespace gattn
