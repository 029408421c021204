#include "analysis/analyze.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "analysis/layer_views.h"
#include "analysis/router_stats.h"
#include "model/gate_site.h"
#include "ops/gate.h"
#include "train/loader.h"
#include "util/error.h"

namespace gattn {

namespace {
using json = nlohmann::json;

constexpr int kHistogramBins = 20;

// Where a gate's scores are plotted: sigmoid-like scores live in [0, 1].
std::pair<double, double> histogram_range(GateActivation act) {
  switch (act) {
    case GateActivation::sigmoid:
    case GateActivation::ns_sigmoid:
      return {0.0, 1.0};
    case GateActivation::silu:
      return {-0.5, 4.0};
    case GateActivation::identity:
      return {-4.0, 4.0};
  }
  return {0.0, 1.0};
}

// Mean of 1/(t+1) over query positions t in [from, T): first-token attention of uniform attention.
double uniform_first_token(int from, int seq_len) {
  double sum = 0;
  for (int t = from; t < seq_len; ++t) sum += 1.0 / (t + 1);
  return seq_len > from ? sum / (seq_len - from) : 0;
}

struct LayerSums {
  std::vector<double> first_token, first_token_late;  // summed probabilities per head
  int64_t queries = 0, late_queries = 0;              // per head
  std::vector<double> score_sum, below_01, abs_in, abs_out;
  int64_t channels_per_head = 0;  // gate values summed per head
  std::vector<int64_t> histogram = std::vector<int64_t>(kHistogramBins, 0);
  int64_t under = 0, over = 0;
  double max_abs = -1;
  int64_t max_sequence = 0, max_position = 0, max_channel = 0;
  // Split by position: [0] the first token, [1] the rest. Sums per head; counts of tokens.
  std::vector<double> value_abs[2], score_at[2], abs_in_at[2], abs_out_at[2];
  int64_t tokens_at[2] = {0, 0};
  std::optional<DeltaNetSums> delta_net;  // a Gated DeltaNet layer
  std::optional<RouterSums> router;       // a mixture-of-experts layer
};

// The sums of every metric over the analysed sequences, one batch at a time.
class Analysis {
 public:
  Analysis(const Weights& w, const AnalysisOptions& o)
      : c_(w.config()), o_(o), site_(attention_gate(w)), sums_(c_.num_hidden_layers) {
    const auto range = histogram_range(site_.activation);
    hist_lo_ = range.first, hist_hi_ = range.second;
    for (int l = 0; l < c_.num_hidden_layers; ++l)
      if (!is_attention(l)) sums_[l].delta_net.emplace(w.layer(l).attention.delta_net);
    for (int l = 0; l < c_.num_hidden_layers; ++l)
      if (w.layer(l).mlp.kind == MlpKind::moe) sums_[l].router.emplace(w.layer(l).mlp.moe);
    for (LayerSums& s : sums_) {
      s.first_token.assign(c_.num_attention_heads, 0);
      s.first_token_late.assign(c_.num_attention_heads, 0);
      for (auto* per_head : {&s.score_sum, &s.below_01, &s.abs_in, &s.abs_out})
        per_head->assign(site_.heads, 0);
      for (int g = 0; g < 2; ++g) {
        s.value_abs[g].assign(c_.num_key_value_heads, 0);
        for (auto* per_head : {&s.score_at[g], &s.abs_in_at[g], &s.abs_out_at[g]})
          per_head->assign(site_.heads, 0);
      }
    }
  }

  void add_batch(const LayerViewRecorder& views, int rows, int64_t first_sequence) {
    for (int l = 0; l < c_.num_hidden_layers; ++l) {
      const LayerView& v = views.layer(l);
      add_max_activation(v, rows, first_sequence, sums_[l]);
      if (sums_[l].delta_net) sums_[l].delta_net->add(v, int64_t(rows) * o_.seq_len, o_.seq_len);
      if (sums_[l].router) sums_[l].router->add(v, int64_t(rows) * o_.seq_len);
      if (!is_attention(l)) continue;  // a Gated DeltaNet layer: no attention to measure
      add_first_token_attention(v, rows, sums_[l]);
      add_values(v, int64_t(rows) * o_.seq_len, sums_[l]);
      if (v.gate_in) add_gate(v, int64_t(rows) * o_.seq_len, sums_[l]);
    }
  }
  AttentionMap attention_map(const LayerViewRecorder& views, int layer, int head) const;
  AnalysisResult result(double loss, int64_t sequences) const;

 private:
  void add_first_token_attention(const LayerView& v, int rows, LayerSums& s) const;
  void add_max_activation(const LayerView& v, int rows, int64_t first_sequence, LayerSums& s) const;
  void add_values(const LayerView& v, int64_t tokens, LayerSums& s) const;
  void add_gate(const LayerView& v, int64_t tokens, LayerSums& s);
  int position_group(int64_t row) const { return row % o_.seq_len == 0 ? 0 : 1; }
  void add_score(double x, int h, LayerSums& s) const;
  LayerAnalysis layer_result(int l, int* sink_heads) const;
  int group() const { return c_.num_attention_heads / c_.num_key_value_heads; }
  bool is_attention(int l) const { return c_.layer(l).attention == AttentionKind::full; }
  // The gate of the full-attention layers (every one has the same), none without any.
  static GateSite attention_gate(const Weights& w) {
    for (int l = 0; l < w.config().num_hidden_layers; ++l)
      if (w.config().layer(l).attention == AttentionKind::full) return w.layer(l).attention.gate;
    return {};
  }

  const Config& c_;
  const AnalysisOptions& o_;
  const GateSite site_;
  std::vector<LayerSums> sums_;
  double hist_lo_ = 0, hist_hi_ = 1;
  std::vector<float> scores_;
};

void Analysis::add_first_token_attention(const LayerView& v, int rows, LayerSums& s) const {
  const int T = o_.seq_len, H = c_.num_attention_heads;
  for (int b = 0; b < rows; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 1; t < T; ++t) {
        const int64_t r = int64_t(b) * T;
        const double p = attention_probability(v, r + t, r, h, c_.head_dim, group(), H);
        s.first_token[h] += p;
        if (t >= o_.from_position) s.first_token_late[h] += p;
      }
  s.queries += int64_t(rows) * (T - 1);
  s.late_queries += int64_t(rows) * (T - o_.from_position);
}

// Massive activations: the largest |h| of the layer's output, and where.
void Analysis::add_max_activation(const LayerView& v, int rows, int64_t first_sequence,
                                  LayerSums& s) const {
  const int T = o_.seq_len, C = c_.hidden_size;
  for (int64_t r = 0; r < int64_t(rows) * T; ++r)
    for (int ch = 0; ch < C; ++ch) {
      const double x = std::abs(v.output[r * C + ch]);
      if (x > s.max_abs) {
        s.max_abs = x;
        s.max_sequence = first_sequence + r / T;
        s.max_position = r % T;
        s.max_channel = ch;
      }
    }
}

void Analysis::add_score(double x, int h, LayerSums& s) const {
  s.score_sum[h] += x;
  s.below_01[h] += x < 0.1;
  const int bin = int(std::floor((x - hist_lo_) / (hist_hi_ - hist_lo_) * kHistogramBins));
  if (bin < 0)
    ++s.under;
  else if (bin >= kHistogramBins)
    ++s.over;
  else
    ++s.histogram[bin];
}

// Mean |v| per key/value head, the first token apart from the rest.
void Analysis::add_values(const LayerView& v, int64_t N, LayerSums& s) const {
  const int d = c_.head_dim;
  for (int64_t r = 0; r < N; ++r) {
    const int g = position_group(r);
    for (int h = 0; h < c_.num_key_value_heads; ++h)
      for (int i = 0; i < d; ++i) s.value_abs[g][h] += std::abs(v.v[r * v.ld_v + h * d + i]);
    ++s.tokens_at[g];
  }
}

void Analysis::add_gate(const LayerView& v, int64_t N, LayerSums& s) {
  const int heads = site_.heads, dim = site_.head_dim, n = site_.width();
  for (int64_t r = 0; r < N; ++r)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < dim; ++i) {
        const double in = std::abs(v.gate_in[r * v.ld_gate_in + h * dim + i]),
                     out = std::abs(v.gate_out[r * v.ld_gate_out + h * dim + i]);
        s.abs_in[h] += in;
        s.abs_out[h] += out;
        s.abs_in_at[position_group(r)][h] += in;
        s.abs_out_at[position_group(r)][h] += out;
      }
  if (v.gate_z) {
    scores_.resize(size_t(N) * n);
    gate_channel_scores(scores_.data(), v.gate_z, site_.shape(int(N), 0, v.ld_gate_z));
    for (int64_t r = 0; r < N; ++r)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < dim; ++i) {
          add_score(scores_[r * n + h * dim + i], h, s);
          s.score_at[position_group(r)][h] += scores_[r * n + h * dim + i];
        }
  }
  s.channels_per_head += N * dim;
}

// Per-head sums over the tokens of each position group, as means.
PositionMeans by_position(const std::vector<double> (&sums)[2], const int64_t (&tokens)[2],
                          int per_token) {
  PositionMeans out;
  for (int g = 0; g < 2; ++g) {
    std::vector<double>& means = g == 0 ? out.first : out.rest;
    for (double x : sums[g]) means.push_back(tokens[g] ? x / double(tokens[g] * per_token) : 0.0);
  }
  return out;
}

// The first sequence's attention probabilities of one head, up to map_size positions.
AttentionMap Analysis::attention_map(const LayerViewRecorder& views, int layer, int head) const {
  if (!is_attention(layer))
    fail("--map ", layer, ":", head, ": layer ", layer,
         " is a Gated DeltaNet layer (linear_attention): it has no attention map");
  const LayerView& v = views.layer(layer);
  AttentionMap map{
      .layer = layer, .head = head, .sequence = 0, .positions = std::min(o_.seq_len, o_.map_size)};
  for (int t = 0; t < map.positions; ++t) {
    std::vector<double>& row = map.probabilities.emplace_back();
    for (int u = 0; u <= t; ++u)
      row.push_back(
          attention_probability(v, t, u, head, c_.head_dim, group(), c_.num_attention_heads));
  }
  return map;
}

LayerAnalysis Analysis::layer_result(int l, int* sink_heads) const {
  const LayerSums& s = sums_[l];
  const int H = c_.num_attention_heads;
  LayerAnalysis layer{.layer = l,
                      .max_abs_hidden = s.max_abs,
                      .max_sequence = s.max_sequence,
                      .max_position = s.max_position,
                      .max_channel = s.max_channel,
                      .value_mean_abs = by_position(s.value_abs, s.tokens_at, c_.head_dim)};
  if (s.router) layer.router = s.router->result();
  if (!is_attention(l)) {
    layer.attention = false;
    layer.delta_net = s.delta_net->result();
    return layer;
  }
  for (int h = 0; h < H; ++h) {
    const double p = s.first_token[h] / double(s.queries),
                 q = s.first_token_late[h] / double(s.late_queries);
    layer.first_token_attention.push_back(p);
    layer.first_token_attention_from_k.push_back(q);
    layer.f_attn += p / H;
    layer.f_attn_from_k += q / H;
    *sink_heads += p > o_.sink_threshold;
  }
  if (s.channels_per_head == 0) return layer;
  LayerGateStats& g = layer.gate.emplace();
  const double channels = double(s.channels_per_head);
  for (int h = 0; h < site_.heads; ++h) {
    g.mean_abs_before.push_back(s.abs_in[h] / channels);
    g.mean_abs_after.push_back(s.abs_out[h] / channels);
  }
  g.mean_abs_before_by_position = by_position(s.abs_in_at, s.tokens_at, site_.head_dim);
  g.mean_abs_after_by_position = by_position(s.abs_out_at, s.tokens_at, site_.head_dim);
  if (site_.scores == 0) return layer;
  g.has_scores = true;
  for (int h = 0; h < site_.heads; ++h) {
    g.mean_score.push_back(s.score_sum[h] / channels);
    g.fraction_below_01.push_back(s.below_01[h] / channels);
    g.layer_mean_score += s.score_sum[h] / channels / site_.heads;
  }
  g.mean_score_by_position = by_position(s.score_at, s.tokens_at, site_.head_dim);
  g.histogram = {.low = hist_lo_,
                 .high = hist_hi_,
                 .counts = s.histogram,
                 .below_low = s.under,
                 .above_high = s.over};
  return layer;
}

// The model-wide router figures: means over the MoE layers, the largest load ratio, and every
// layer's dead experts counted.
void add_router_summary(const RouterLayerStats& layer, AnalysisResult& r) {
  MoeSummary& m = r.moe ? *r.moe : r.moe.emplace();
  ++m.layers;
  m.entropy_ratio += layer.entropy_ratio;
  m.max_load_ratio = std::max(m.max_load_ratio, layer.max_load_ratio);
  m.dead_experts += int(layer.dead_experts.size());
  if (layer.has_shared)
    m.shared_gate_mean = m.shared_gate_mean.value_or(0) + layer.shared_gate_mean;
}

void finish_router_summary(MoeSummary& m) {
  m.entropy_ratio /= m.layers;
  if (m.shared_gate_mean) *m.shared_gate_mean /= m.layers;
}

AnalysisResult Analysis::result(double loss, int64_t sequences) const {
  const int L = c_.num_hidden_layers, T = o_.seq_len;
  AnalysisResult r{
      .sequences = sequences,
      .seq_len = T,
      .bos_at_position_0 = o_.bos,
      .from_position = o_.from_position,
      .sink_threshold = o_.sink_threshold,
      .loss = loss,
      .uniform_f_attn = uniform_first_token(1, T),
      .uniform_f_attn_from_k = uniform_first_token(o_.from_position, T),
      .uniform_sink_fraction = uniform_first_token(1, T) > o_.sink_threshold ? 1.0 : 0.0,
      .gate = gate_description(c_.gate)};
  int sink_heads = 0, A = 0;  // A: the full-attention layers, over which attention is averaged
  for (int l = 0; l < L; ++l) A += is_attention(l);
  double gate_score = 0, delta_net_gate = 0;
  for (int l = 0; l < L; ++l) {
    LayerAnalysis& layer = r.layers.emplace_back(layer_result(l, &sink_heads));
    r.m_act += sums_[l].max_abs / L;
    if (layer.delta_net) delta_net_gate += layer.delta_net->layer_mean_gate / (L - A);
    if (layer.router) add_router_summary(*layer.router, r);
    if (!layer.attention) continue;
    r.f_attn += layer.f_attn / A;
    r.f_attn_from_k += layer.f_attn_from_k / A;
    if (layer.gate && layer.gate->has_scores) gate_score += layer.gate->layer_mean_score / A;
  }
  r.attention_layers = A;
  r.sink_fraction = A ? double(sink_heads) / (A * c_.num_attention_heads) : 0.0;
  if (site_.scores > 0) r.gate_score = gate_score;
  if (A < L) r.delta_net_gate = delta_net_gate;
  if (r.moe) finish_router_summary(*r.moe);
  return r;
}

// The loss of the same sequences without the interventions, to report beside the changed one.
double unmodified_loss(const Weights& weights, DataLoader& loader, int64_t sequences,
                       const AnalysisOptions& o) {
  TrainState state(weights);
  std::vector<int32_t> ids(int64_t(o.batch) * o.seq_len), targets(ids.size());
  LossSum sum;
  for (int64_t first = 0; first < sequences; first += o.batch) {
    const int rows = int(std::min<int64_t>(o.batch, sequences - first));
    loader.fill(first, rows, ids.data(), targets.data());
    const LossSum loss = state.forward({ids.data(), targets.data(), rows, o.seq_len});
    sum.nats += loss.nats;
    sum.tokens += loss.tokens;
  }
  return sum.nats / double(sum.tokens);
}

void check_options(const Config& c, const AnalysisOptions& o) {
  if (o.sequences < 1) fail("analyze: sequences must be at least 1, got ", o.sequences);
  if (o.seq_len < 2 || o.seq_len > (1 << 20))
    fail("analyze: seq must be in [2, 2^20], got ", o.seq_len);
  if (o.batch < 1) fail("analyze: batch must be at least 1, got ", o.batch);
  if (o.map_size < 1) fail("analyze: map_size must be at least 1, got ", o.map_size);
  if (o.from_position < 1 || o.from_position >= o.seq_len)
    fail("--from-position must be in [1, ", o.seq_len, "), got ", o.from_position);
  for (const auto& [layer, head] : o.maps)
    if (layer < 0 || layer >= c.num_hidden_layers || head < 0 || head >= c.num_attention_heads)
      fail("attention map ", layer, ":", head, " is outside the model's ", c.num_hidden_layers,
           " layers and ", c.num_attention_heads, " heads");
}
}  // namespace

AnalysisResult analyze(const Weights& weights, const TokenShard& shard, const AnalysisOptions& o) {
  check_options(weights.config(), o);
  const int T = o.seq_len;
  DataLoader loader(shard, {o.batch, T, o.bos ? WindowKind::bos : WindowKind::plain, 0, false});
  const int64_t sequences = std::min<int64_t>(o.sequences, loader.windows_per_epoch());
  TrainState state(weights);
  LayerViewRecorder views(weights.config().num_hidden_layers, &o.interventions);
  std::optional<InterventionHooks> interventions;
  if (o.interventions.any()) interventions.emplace(o.interventions, weights);
  ProjectionInputRecorder inputs(weights.config().num_hidden_layers);
  HookChain hooks(interventions ? std::vector<PassHooks*>{&*interventions, &views, &inputs}
                                : std::vector<PassHooks*>{&views, &inputs});
  state.set_hooks(&hooks);
  Analysis analysis(weights, o);
  std::vector<AttentionMap> maps;
  std::vector<int32_t> ids(int64_t(o.batch) * T), targets(ids.size());
  double nats = 0;
  int64_t tokens = 0;
  for (int64_t first = 0; first < sequences; first += o.batch) {
    const int rows = int(std::min<int64_t>(o.batch, sequences - first));
    loader.fill(first, rows, ids.data(), targets.data());
    const LossSum loss = state.forward({ids.data(), targets.data(), rows, T});
    nats += loss.nats;
    tokens += loss.tokens;
    analysis.add_batch(views, rows, first);
    if (first == 0)
      for (const auto& [layer, head] : o.maps)
        maps.push_back(analysis.attention_map(views, layer, head));
  }
  AnalysisResult result = analysis.result(nats / double(tokens), sequences);
  for (LayerAnalysis& l : result.layers) l.projection_inputs = inputs.layer(l.layer);
  result.attention_maps = std::move(maps);
  if (o.interventions.any()) {
    result.interventions = o.interventions.specs;
    result.unmodified_loss = unmodified_loss(weights, loader, sequences, o);
  }
  return result;
}

namespace {
json position_json(const PositionMeans& m) { return {{"first", m.first}, {"rest", m.rest}}; }

json gate_json(const LayerGateStats& g) {
  json out = {{"mean_abs_before", g.mean_abs_before},
              {"mean_abs_after", g.mean_abs_after},
              {"by_position",
               {{"mean_abs_before", position_json(g.mean_abs_before_by_position)},
                {"mean_abs_after", position_json(g.mean_abs_after_by_position)}}}};
  if (!g.has_scores) return out;
  out["mean_score"] = g.mean_score;
  out["by_position"]["mean_score"] = position_json(g.mean_score_by_position);
  out["fraction_below_0.1"] = g.fraction_below_01;
  out["layer_mean_score"] = g.layer_mean_score;
  out["histogram"] = {{"low", g.histogram.low},
                      {"high", g.histogram.high},
                      {"counts", g.histogram.counts},
                      {"below_low", g.histogram.below_low},
                      {"above_high", g.histogram.above_high}};
  return out;
}

json delta_net_json(const DeltaNetLayerStats& d) {
  return {{"mean_gate", d.mean_gate},
          {"fraction_gate_below_0.1", d.fraction_gate_below_01},
          {"mean_gate_by_position", {{"first", d.mean_gate_first}, {"rest", d.mean_gate_rest}}},
          {"mean_decay", d.mean_decay},
          {"mean_beta", d.mean_beta},
          {"layer_mean_gate", d.layer_mean_gate},
          {"layer_mean_decay", d.layer_mean_decay},
          {"layer_mean_beta", d.layer_mean_beta}};
}

json router_json(const RouterLayerStats& s) {
  json out = {{"mean_entropy", s.mean_entropy},
              {"entropy_ratio", s.entropy_ratio},
              {"load", s.load},
              {"dead_experts", s.dead_experts},
              {"max_load_ratio", s.max_load_ratio},
              {"load_cv", s.load_cv},
              {"mean_selected_mass", s.mean_selected_mass}};
  if (s.has_shared)
    out["shared_expert_gate"] = {{"mean", s.shared_gate_mean},
                                 {"fraction_below_0.1", s.shared_gate_below_01},
                                 {"histogram", s.shared_gate_histogram}};
  return out;
}

json layer_json(const LayerAnalysis& l) {
  json out = {
      {"layer", l.layer},
      {"kind", l.attention ? "full_attention" : "linear_attention"},
      {"first_token_attention", l.first_token_attention},
      {"first_token_attention_from_k", l.first_token_attention_from_k},
      {"max_abs_hidden", l.max_abs_hidden},
      {"max_at",
       {{"sequence", l.max_sequence}, {"position", l.max_position}, {"channel", l.max_channel}}}};
  if (l.delta_net) out["delta_net"] = delta_net_json(*l.delta_net);
  if (l.router) out["router"] = router_json(*l.router);
  json inputs = json::array();
  for (const ProjectionInputStats& p : l.projection_inputs)
    inputs.push_back({{"site", p.site},
                      {"values", p.values},
                      {"mean", p.mean},
                      {"kurtosis", p.kurtosis},
                      {"max_abs", p.max_abs}});
  out["projection_inputs"] = inputs;
  if (!l.attention) return out;  // a Gated DeltaNet layer: no attention, values or gate
  out["f_attn"] = l.f_attn;
  out["f_attn_from_k"] = l.f_attn_from_k;
  out["value_mean_abs"] = position_json(l.value_mean_abs);
  if (l.gate) out["gate"] = gate_json(*l.gate);
  return out;
}
}  // namespace

json to_json(const AnalysisResult& r) {
  json layers = json::array(), maps = json::array();
  for (const LayerAnalysis& l : r.layers) layers.push_back(layer_json(l));
  for (const AttentionMap& m : r.attention_maps)
    maps.push_back({{"layer", m.layer},
                    {"head", m.head},
                    {"sequence", m.sequence},
                    {"positions", m.positions},
                    {"probabilities", m.probabilities}});
  json out = {{"sequences", r.sequences},
              {"seq_len", r.seq_len},
              {"bos_at_position_0", r.bos_at_position_0},
              {"from_position", r.from_position},
              {"sink_threshold", r.sink_threshold},
              {"loss", r.loss},
              {"f_attn", r.f_attn},
              {"f_attn_from_k", r.f_attn_from_k},
              {"sink_fraction", r.sink_fraction},
              {"attention_layers", r.attention_layers},
              {"m_act", r.m_act},
              {"uniform",
               {{"f_attn", r.uniform_f_attn},
                {"f_attn_from_k", r.uniform_f_attn_from_k},
                {"sink_fraction", r.uniform_sink_fraction}}},
              {"gate", r.gate},
              {"layers", layers},
              {"attention_maps", maps}};
  if (r.gate_score) out["gate_score"] = *r.gate_score;
  if (r.delta_net_gate) out["delta_net_gate"] = *r.delta_net_gate;
  if (r.moe) {
    json moe = {{"layers", r.moe->layers},
                {"entropy_ratio", r.moe->entropy_ratio},
                {"max_load_ratio", r.moe->max_load_ratio},
                {"dead_experts", r.moe->dead_experts}};
    if (r.moe->shared_gate_mean) moe["shared_expert_gate"] = *r.moe->shared_gate_mean;
    out["moe"] = moe;
  }
  if (!r.interventions.empty()) {
    out["interventions"] = r.interventions;
    out["unmodified_loss"] = r.unmodified_loss.value_or(0.0);
  }
  return out;
}

}  // namespace gattn
