// The order of a Gated DeltaNet layer's value heads: Hugging Face's grouped one (value head
// g * r + j is the j-th of key head g, r = value heads / key heads) or llama.cpp's tiled one
// (j * key_heads + g), which a qwen35 GGUF file stores (Config::linear_value_heads_tiled).
#pragma once
#include <memory>

#include "model/weights.h"

namespace gattn {

// A copy of `model` (f32 storage) with its value heads in the `tiled` order: the v rows of
// in_proj_qkv and the conv kernel, in_proj_z's rows, in_proj_b's and in_proj_a's rows, A_log and
// dt_bias, out_proj's columns moved, the config's flag set; the same function of the input.
// nullptr where the model already has that order (or no value heads to move: r = 1, no layers).
std::unique_ptr<Weights> reorder_value_heads(const Weights& model, bool tiled);

}  // namespace gattn
