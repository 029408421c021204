// A gattn model written as a Hugging Face folder in one of the layouts the loader reads
// (docs/INTEROP.md): plain Qwen3, the authors' gated Qwen3 (gate rows grouped by KV group inside
// q_proj), Qwen3-Next (interleaved per head, norms stored as w - 1, Gated DeltaNet projections
// grouped per key head) or Qwen3.5's text model (Qwen3_5ForCausalLM: as Qwen3-Next but the
// DeltaNet projections flat). Models the format cannot express are refused with the reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/staged_folder.h"
#include "model/config.h"
#include "model/weights.h"

namespace gattn {

enum class HfExportFormat { qwen3, authors, qwen3_next, qwen3_5 };

struct HfExportOptions {
  HfExportFormat format = HfExportFormat::qwen3;
  Dtype dtype = Dtype::BF16;                         // BF16 (round to nearest even) or F32
  int64_t max_shard_bytes = int64_t(5) << 30;        // larger checkpoints are sharded with an index
  std::string tokenizer_json = "";                   // copied beside the model when not empty
  ExistingFolder existing = ExistingFolder::refuse;  // replace: --force
};

// Why `config` has no equivalent in `format`; "" when it has one.
std::string hf_export_refusal(const Config& config, HfExportFormat format);

// Writes out/config.json, generation_config.json, model.safetensors (or shards and
// model.safetensors.index.json) and tokenizer.json as one folder (io/staged_folder.h): `out` holds
// the old folder or the whole new one, never a mix. Error with the reason when refused.
void export_hf(const Weights& weights, const std::string& out, const HfExportOptions& options);

}  // namespace gattn
