// Each layer's own shape, decided once from the model's config (gemma.cpp's layer_configs): the
// kind and geometry of its attention block and of its MLP block, its gate site and its
// projection stride. Blocks, the parameter layout and the memory plans read these, never the
// model-wide fields, so layers of one model may differ.
#pragma once
#include <vector>

#include "model/config.h"
#include "model/gate_site.h"

namespace gattn {

// What both blocks of a layer do with their raw output before it joins the residual stream.
struct BlockOutputConfig {
  int hidden = 0;
  float eps = 0;
  bool sandwich_norm = false;  // an RMSNorm of the block's output (its own weight)
  float clip = 0;              // clamp of the block's output to [-clip, clip] (0: none)
};

// A Gated DeltaNet block's geometry (AttentionKind::linear).
struct DeltaNetConfig {
  int key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0, conv_kernel = 0;
  bool tiled = false;  // value head h reads key head h % key_heads (else h / (value / key heads))

  int key_width() const { return key_heads * key_dim; }
  int value_width() const { return value_heads * value_dim; }
  // q | k | v, the channels of the convolution.
  int conv_channels() const { return 2 * key_width() + value_width(); }
  // Rows of the fused in_proj_qkv | in_proj_z | in_proj_b | in_proj_a projection, and its output's
  // row stride padded to whole cache lines.
  int projection_rows() const { return conv_channels() + value_width() + 2 * value_heads; }
  int projection_stride() const { return (projection_rows() + 15) / 16 * 16; }
};

struct AttentionConfig {
  AttentionKind kind = AttentionKind::full;
  int hidden = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool qk_norm = true;
  GateConfig gate_config;  // as configured (parameter names and initialisation)
  GateSite gate;           // where it sits and what it computes
  BlockOutputConfig output;
  DeltaNetConfig delta_net;  // kind linear

  int q_dim() const { return heads * head_dim; }
  int kv_dim() const { return kv_heads * head_dim; }
  // Rows of the fused q | k | v | gate-weight projection, and its output's row stride, padded
  // to whole cache lines (16 floats = 64 bytes: GEMM packing is faster).
  int projection_rows() const {
    return q_dim() + 2 * kv_dim() + (gate_config.has_weight() ? gate.scores : 0);
  }
  int projection_stride() const { return (projection_rows() + 15) / 16 * 16; }
};

// A mixture-of-experts block's geometry (MlpKind::moe): `experts` SwiGLU experts of width
// `expert_intermediate`, `top_k` of them per token; a shared expert of width
// `shared_intermediate` (0: none) scaled by a sigmoid gate.
struct MoeConfig {
  int experts = 0, top_k = 0, expert_intermediate = 0, shared_intermediate = 0;
  bool norm_topk = true;  // the selected probabilities renormalised to sum to 1
};

struct MlpConfig {
  MlpKind kind = MlpKind::dense;
  int hidden = 0, intermediate = 0;  // intermediate: kind dense
  BlockOutputConfig output;
  MoeConfig moe;  // kind moe
};

struct LayerConfig {
  AttentionConfig attention;
  MlpConfig mlp;
};

std::vector<LayerConfig> layer_configs(const Config& c);

}  // namespace gattn
