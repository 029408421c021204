#include "analysis/analyze.h"

#include <algorithm>
#include <cmath>

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

struct HeadSums {                                     // per layer
  std::vector<double> first_token, first_token_late;  // summed probabilities per head
  int64_t queries = 0, late_queries = 0;              // per head
  std::vector<double> score_sum, below_01, abs_in, abs_out;
  int64_t channels_per_head = 0;  // gate values summed per head
  std::vector<int64_t> histogram;
  int64_t under = 0, over = 0;
  double max_abs = -1;
  int64_t max_sequence = 0, max_position = 0, max_channel = 0;
};

// Mean of 1/(t+1) over query positions t in [from, T): first-token attention of uniform attention.
double uniform_first_token(int from, int seq_len) {
  double sum = 0;
  for (int t = from; t < seq_len; ++t) sum += 1.0 / (t + 1);
  return seq_len > from ? sum / (seq_len - from) : 0;
}
}  // namespace

json analyze(Model& model, const TokenShard& shard, const AnalysisOptions& o) {
  const Config& c = model.config();
  const int L = c.num_hidden_layers, H = c.num_attention_heads, d = c.head_dim;
  const int group = H / c.num_key_value_heads, T = o.seq_len;
  if (o.from_position < 1 || o.from_position >= T)
    fail("--from-position must be in [1, ", T, "), got ", o.from_position);
  for (const auto& [layer, head] : o.maps)
    if (layer < 0 || layer >= L || head < 0 || head >= H)
      fail("attention map ", layer, ":", head, " is outside the model's ", L, " layers and ", H,
           " heads");
  DataLoader loader(shard, {o.batch, T, o.bos ? WindowKind::bos : WindowKind::plain, 0, false});
  const int64_t sequences = std::min<int64_t>(o.sequences, loader.windows_per_epoch());
  const GateConfig& gate = c.gate;
  const int gate_heads = c.gate_heads(), gate_dim = c.gate_head_dim();
  const auto [hist_lo, hist_hi] = histogram_range(gate.activation);

  std::vector<HeadSums> sums(L);
  for (HeadSums& s : sums) {
    s.first_token.assign(H, 0);
    s.first_token_late.assign(H, 0);
    s.score_sum.assign(gate_heads, 0);
    s.below_01.assign(gate_heads, 0);
    s.abs_in.assign(gate_heads, 0);
    s.abs_out.assign(gate_heads, 0);
    s.histogram.assign(kHistogramBins, 0);
  }
  json maps = json::array();
  std::vector<int32_t> ids(int64_t(o.batch) * T), targets(ids.size());
  std::vector<float> scores;
  double nats = 0;
  int64_t tokens = 0;
  const float scale = 1.0f / std::sqrt(float(d));
  for (int64_t first = 0; first < sequences; first += o.batch) {
    const int rows = int(std::min<int64_t>(o.batch, sequences - first));
    loader.fill(first, rows, ids.data(), targets.data());
    const LossSum loss = model.forward({ids.data(), targets.data(), rows, T});
    nats += loss.nats;
    tokens += loss.tokens;
    const int64_t N = int64_t(rows) * T;
    for (int l = 0; l < L; ++l) {
      const Model::LayerView v = model.layer_view(l);
      HeadSums& s = sums[l];
      // p(t -> 0) = exp(q_t . k_0 / sqrt(d) - lse_t), from the log-sum-exp the forward pass saved
      for (int b = 0; b < rows; ++b)
        for (int h = 0; h < H; ++h) {
          const float* k0 = v.k + int64_t(b) * T * v.ld_k + (h / group) * d;
          for (int t = 1; t < T; ++t) {
            const int64_t r = int64_t(b) * T + t;
            const float* q = v.q + r * v.ld_q + h * d;
            float dot = 0;
            for (int i = 0; i < d; ++i) dot += q[i] * k0[i];
            const double p = std::exp(double(dot * scale) - double(v.attn_lse[r * H + h]));
            s.first_token[h] += p;
            if (t >= o.from_position) s.first_token_late[h] += p;
          }
        }
      s.queries += int64_t(rows) * (T - 1);
      s.late_queries += int64_t(rows) * (T - o.from_position);
      // massive activations: the largest |h| of the layer's output, and where
      for (int64_t r = 0; r < N; ++r)
        for (int ch = 0; ch < c.hidden_size; ++ch) {
          const double x = std::abs(v.output[r * c.hidden_size + ch]);
          if (x > s.max_abs) {
            s.max_abs = x;
            s.max_sequence = first + r / T;
            s.max_position = r % T;
            s.max_channel = ch;
          }
        }
      if (v.gate_in) {
        const int n = gate_heads * gate_dim;
        for (int64_t r = 0; r < N; ++r)
          for (int h = 0; h < gate_heads; ++h)
            for (int i = 0; i < gate_dim; ++i) {
              s.abs_in[h] += std::abs(v.gate_in[r * v.ld_gate_in + h * gate_dim + i]);
              s.abs_out[h] += std::abs(v.gate_out[r * v.ld_gate_out + h * gate_dim + i]);
            }
        if (v.gate_z) {
          scores.resize(size_t(N) * n);
          gate_channel_scores(scores.data(), v.gate_z, c.gate_shape(int(N), 0, 0, v.ld_gate_z));
          for (int64_t r = 0; r < N; ++r)
            for (int h = 0; h < gate_heads; ++h)
              for (int i = 0; i < gate_dim; ++i) {
                const double x = scores[r * n + h * gate_dim + i];
                s.score_sum[h] += x;
                s.below_01[h] += x < 0.1;
                const int bin =
                    int(std::floor((x - hist_lo) / (hist_hi - hist_lo) * kHistogramBins));
                if (bin < 0)
                  ++s.under;
                else if (bin >= kHistogramBins)
                  ++s.over;
                else
                  ++s.histogram[bin];
              }
        }
        s.channels_per_head += N * gate_dim;
      }
    }
    if (first == 0)
      for (const auto& [layer, head] : o.maps) {  // the first sequence's attention probabilities
        const Model::LayerView v = model.layer_view(layer);
        const int size = std::min(T, o.map_size);
        json rows_json = json::array();
        for (int t = 0; t < size; ++t) {
          const float* q = v.q + int64_t(t) * v.ld_q + head * d;
          json row = json::array();
          for (int u = 0; u <= t; ++u) {
            const float* k = v.k + int64_t(u) * v.ld_k + (head / group) * d;
            float dot = 0;
            for (int i = 0; i < d; ++i) dot += q[i] * k[i];
            row.push_back(
                std::exp(double(dot * scale) - double(v.attn_lse[int64_t(t) * H + head])));
          }
          rows_json.push_back(row);
        }
        maps.push_back({{"layer", layer},
                        {"head", head},
                        {"sequence", 0},
                        {"positions", size},
                        {"probabilities", rows_json}});
      }
  }

  json layers = json::array();
  double f_attn = 0, f_attn_late = 0, m_act = 0, gate_score = 0;
  int sink_heads = 0;
  for (int l = 0; l < L; ++l) {
    const HeadSums& s = sums[l];
    json first = json::array(), late = json::array();
    double layer_mean = 0, layer_late = 0;
    for (int h = 0; h < H; ++h) {
      const double p = s.first_token[h] / double(s.queries),
                   q = s.first_token_late[h] / double(s.late_queries);
      first.push_back(p);
      late.push_back(q);
      layer_mean += p / H;
      layer_late += q / H;
      sink_heads += p > o.sink_threshold;
    }
    json layer = {
        {"layer", l},
        {"first_token_attention", first},
        {"first_token_attention_from_k", late},
        {"f_attn", layer_mean},
        {"f_attn_from_k", layer_late},
        {"max_abs_hidden", s.max_abs},
        {"max_at",
         {{"sequence", s.max_sequence}, {"position", s.max_position}, {"channel", s.max_channel}}}};
    f_attn += layer_mean / L;
    f_attn_late += layer_late / L;
    m_act += s.max_abs / L;
    if (s.channels_per_head > 0) {
      json g = json::object();
      json in = json::array(), out = json::array();
      for (int h = 0; h < gate_heads; ++h) {
        in.push_back(s.abs_in[h] / double(s.channels_per_head));
        out.push_back(s.abs_out[h] / double(s.channels_per_head));
      }
      g["mean_abs_before"] = in;
      g["mean_abs_after"] = out;
      if (gate.has_scores()) {
        json mean = json::array(), below = json::array();
        double layer_score = 0;
        for (int h = 0; h < gate_heads; ++h) {
          mean.push_back(s.score_sum[h] / double(s.channels_per_head));
          below.push_back(s.below_01[h] / double(s.channels_per_head));
          layer_score += s.score_sum[h] / double(s.channels_per_head) / gate_heads;
        }
        g["mean_score"] = mean;
        g["fraction_below_0.1"] = below;
        g["layer_mean_score"] = layer_score;
        g["histogram"] = {{"low", hist_lo},
                          {"high", hist_hi},
                          {"counts", s.histogram},
                          {"below_low", s.under},
                          {"above_high", s.over}};
        gate_score += layer_score / L;
      }
      layer["gate"] = g;
    }
    layers.push_back(layer);
  }
  json result = {{"sequences", sequences},
                 {"seq_len", T},
                 {"bos_at_position_0", o.bos},
                 {"from_position", o.from_position},
                 {"sink_threshold", o.sink_threshold},
                 {"loss", nats / double(tokens)},
                 {"f_attn", f_attn},
                 {"f_attn_from_k", f_attn_late},
                 {"sink_fraction", double(sink_heads) / (L * H)},
                 {"m_act", m_act},
                 {"uniform",
                  {{"f_attn", uniform_first_token(1, T)},
                   {"f_attn_from_k", uniform_first_token(o.from_position, T)},
                   {"sink_fraction", uniform_first_token(1, T) > o.sink_threshold ? 1.0 : 0.0}}},
                 {"gate", gate_description(gate)},
                 {"layers", layers},
                 {"attention_maps", maps}};
  if (gate.has_scores()) result["gate_score"] = gate_score;
  return result;
}

}  // namespace gattn
