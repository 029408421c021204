// The paper's measurements of a model on held-out sequences (../shared/paper.md, "Metric
// definitions"): attention on the first token per layer and head (F-Attn) and the share of sink
// heads (Sink^eps, Gu et al.), gate score statistics, massive activations (M-Act), attention maps.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/delta_net_stats.h"
#include "analysis/projection_inputs.h"
#include "analysis/router_stats.h"
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

// Per-head means over the first token of each sequence and over the rest.
struct PositionMeans {
  std::vector<double> first = {}, rest = {};
};

struct ScoreHistogram {
  double low = 0, high = 0;          // the binned range
  std::vector<int64_t> counts = {};  // equal bins over [low, high)
  int64_t below_low = 0, above_high = 0;
};

// What a layer's gate does to its input, per gate head.
struct LayerGateStats {
  std::vector<double> mean_abs_before = {},
                      mean_abs_after = {};  // mean |Y| into and out of the gate
  PositionMeans mean_abs_before_by_position, mean_abs_after_by_position;
  // Gates with scores (not an additive or normalising gate without them):
  bool has_scores = false;
  std::vector<double> mean_score = {}, fraction_below_01 = {};
  PositionMeans mean_score_by_position;
  double layer_mean_score = 0;
  ScoreHistogram histogram;
};

struct LayerAnalysis {
  int layer = 0;
  bool attention = true;  // false: a Gated DeltaNet layer (M-Act only; nothing of attention)
  // Attention on the first token per head, over query positions >= 1 and >= from_position.
  std::vector<double> first_token_attention = {}, first_token_attention_from_k = {};
  double f_attn = 0, f_attn_from_k = 0;  // their means over heads
  double max_abs_hidden = 0;             // max |layer output|, and where
  int64_t max_sequence = 0, max_position = 0, max_channel = 0;
  PositionMeans value_mean_abs;
  std::optional<LayerGateStats> gate = {};           // layers with a gate
  std::optional<DeltaNetLayerStats> delta_net = {};  // Gated DeltaNet layers
  std::optional<RouterLayerStats> router = {};       // mixture-of-experts layers
  // Each projection input's kurtosis and largest magnitude (analysis/projection_inputs.h).
  std::vector<ProjectionInputStats> projection_inputs = {};
};

// Over the mixture-of-experts layers: the mean entropy ratio, the largest load ratio, the dead
// experts of every layer counted, and the shared expert gate's mean (models with one).
struct MoeSummary {
  int layers = 0;
  double entropy_ratio = 0, max_load_ratio = 0;
  int dead_experts = 0;
  std::optional<double> shared_gate_mean = {};
};

struct AttentionMap {
  int layer = 0, head = 0, sequence = 0, positions = 0;
  std::vector<std::vector<double>> probabilities = {};  // [query][key <= query]
};

struct AnalysisResult {
  int64_t sequences = 0;
  int seq_len = 0;
  bool bos_at_position_0 = true;
  int from_position = 0;
  double sink_threshold = 0;
  double loss = 0;
  // F-Attn and Sink^eps over the full-attention layers; M-Act over every layer.
  double f_attn = 0, f_attn_from_k = 0, sink_fraction = 0, m_act = 0;
  int attention_layers = 0;
  std::optional<double> gate_score = {};      // models whose gates have scores
  std::optional<double> delta_net_gate = {};  // mean silu(z) over the Gated DeltaNet layers
  std::optional<MoeSummary> moe = {};         // models with MoE layers
  // The same metrics under uniform attention, for scale.
  double uniform_f_attn = 0, uniform_f_attn_from_k = 0, uniform_sink_fraction = 0;
  std::string gate = {};  // the gate's description
  std::vector<LayerAnalysis> layers = {};
  std::vector<AttentionMap> attention_maps = {};
  // With --intervene: the interventions and the loss of the same sequences without them.
  std::vector<std::string> interventions = {};
  std::optional<double> unmodified_loss = {};
};

// The analysis as docs/ANALYSIS.md's JSON (what `gattn analyze --out` writes and the reports read).
nlohmann::json to_json(const AnalysisResult& result);

// Per layer and head first_token_attention (positions >= 1 and >= from_position),
// max_abs_hidden and where, gate statistics (mean score, fraction below 0.1, histogram, mean |Y|
// before and after), and the model-level f_attn, sink_fraction, m_act, gate_score next to their
// values under uniform attention. See docs/ANALYSIS.md.
AnalysisResult analyze(const Weights& weights, const TokenShard& shard,
                       const AnalysisOptions& options);

}  // namespace gattn
