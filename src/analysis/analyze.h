// The paper's measurements of a model on held-out sequences (../shared/paper.md, "Metric
// definitions"): attention on the first token per layer and head (F-Attn) and the share of sink
// heads (Sink^eps, Gu et al.), gate score statistics, massive activations (M-Act), attention maps.
#pragma once
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "io/token_shard.h"
#include "model/intervention.h"
#include "model/train_state.h"
#include "model/weights.h"

namespace gattn {

struct AnalysisOptions {
  int sequences = 64;  // held-out windows, the first of the shard in stream order
  int seq_len = 256;
  bool bos = true;              // BOS at position 0 (bos windows), else plain stream windows
  int from_position = 16;       // F-Attn is also averaged over query positions >= this (Gu et al.)
  double sink_threshold = 0.3;  // a head is a sink head when its F-Attn exceeds this
  int batch = 8;
  std::vector<std::pair<int, int>> maps;  // (layer, head) attention maps of the first sequence
  int map_size = 64;                      // positions shown in a map
  Interventions interventions;            // analyse the model changed so (--intervene)
};

// JSON with per layer and head first_token_attention (positions >= 1 and >= from_position),
// max_abs_hidden and where, gate statistics (mean score, fraction below 0.1, histogram, mean |Y|
// before and after), and the model-level f_attn, sink_fraction, m_act, gate_score next to their
// values under uniform attention. See docs/ANALYSIS.md.
nlohmann::json analyze(const Weights& weights, const TokenShard& shard,
                       const AnalysisOptions& options);

}  // namespace gattn
