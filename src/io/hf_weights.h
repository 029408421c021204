// A Hugging Face checkpoint's tensors (model.safetensors, or shards listed by
// model.safetensors.index.json) converted into gattn's parameter layout: q|gate rows split
// (grouped by KV group for the authors' layout, interleaved per head for Qwen3-Next/Qwen3.5),
// Qwen3-Next's per-key-head groups of a Gated DeltaNet's in_proj_qkvz and in_proj_ba made flat
// (Qwen3.5's in_proj_qkv | in_proj_z, in_proj_b | in_proj_a), zero-centred norm weights w stored
// as 1 + w (all but a Gated DeltaNet's output norm), F32/BF16/F16 to float.
//
// Streamed: each tensor goes straight from its mapped file into `dest` in bounded chunks whose
// pages are released as soon as they are converted, so loading needs the float parameters plus
// a few MiB, not a second copy of the checkpoint.
#pragma once
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "model/layout.h"
#include "model/weights.h"
#include "util/log.h"

namespace gattn {

// The shard files of a folder and the tensor each name lives in. `index` is the path of
// model.safetensors.index.json, "" for a single model.safetensors.
struct HfShards {
  std::string index;
  std::vector<std::string> files;  // paths, each once
  std::vector<std::pair<std::string, size_t>>
      tensor_file;  // tensor name -> files[i]; "" index: all
};
HfShards hf_shards(const std::string& folder);
// The (tensor, shard file name) pairs of a parsed model.safetensors.index.json; an error naming
// `origin` for a missing weight_map or a file name that leaves the folder.
std::vector<std::pair<std::string, std::string>> hf_weight_map(const nlohmann::json& index,
                                                               const std::string& origin);

// The checkpoint's name of a gattn layout tensor: the layout's prefix (model.language_model. for
// Qwen3.5), and for Qwen3-Next the grouped projection a DeltaNet's flat one comes from.
std::string hf_checkpoint_name(const std::string& ours, const HfModelInfo& info);

// dest holds layout.total() floats; every tensor of the layout is written.
// What the loader read but did not use goes to `log` as notes (info.notes are the caller's).
void load_hf_weights(const HfModelInfo& info, const ParamLayout& layout, float* dest,
                     LogSink& log = discard_log());

// A gattn checkpoint (docs/MODEL.md), a Hugging Face folder (is_hf_model_folder) or a llama.cpp
// GGUF file (io/gguf_model.h; f32 and bf16 storage, map_experts unused); notes (fields
// and tensors read but not used) go to `log`. storage: Weights' storage (bf16: read straight into
// bf16, no f32 copy). map_experts (bf16 storage of a Hugging Face folder): the experts the files
// hold in bf16, in the layout's order, are read from the mapped files (Weights::map_bf16), not
// copied: a mixture of experts larger than memory decodes, the kernel paging experts in.
std::unique_ptr<Weights> load_any_model(const std::string& folder, LogSink& log = discard_log(),
                                        WeightDtype storage = WeightDtype::f32,
                                        bool map_experts = true);

}  // namespace gattn
