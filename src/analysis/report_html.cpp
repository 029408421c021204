#include "analysis/report_html.h"

#include <string>
#include <vector>

#include "analysis/svg_charts.h"

namespace gattn {

using nlohmann::json;

namespace {

// Each MoE layer's expert load (share of the top-k choices; dashed: balanced) and, with a shared
// expert, the histogram of its gate's scores.
std::string moe_section(const json& layers) {
  std::string s = "<h2>Mixture-of-experts layers</h2>\n";
  std::vector<Bar> load = per_head_bars(layers, "router", "load"), entropy;
  for (Bar& b : load) b.label[0] = 'e';
  size_t experts = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (!layers[l].contains("router")) continue;
    experts = layers[l]["router"]["load"].size();
    entropy.push_back({"/layers/" + std::to_string(l) + "/router/entropy_ratio",
                       "L" + std::to_string(l), layers[l]["router"]["entropy_ratio"].get<double>(),
                       0, 0, ""});
  }
  s +=
      bar_chart("router_load", "share of the top-k choices per layer and expert (dashed: balanced)",
                load, 0, 1.0 / double(experts));
  s += bar_chart("router_entropy_ratio", "router entropy / ln(experts) per layer (1: uniform)",
                 entropy, 1.0);
  for (size_t l = 0; l < layers.size(); ++l) {
    if (!layers[l].contains("router") || !layers[l]["router"].contains("shared_expert_gate"))
      continue;
    const std::string path =
        "/layers/" + std::to_string(l) + "/router/shared_expert_gate/histogram";
    const json& h = layers[l]["router"]["shared_expert_gate"]["histogram"];
    std::vector<Bar> bins;
    for (size_t b = 0; b < h.size(); ++b)
      bins.push_back({path + "/" + std::to_string(b), short_num(double(b) / double(h.size())),
                      h[b].get<double>(), 0, int(b), ""});
    s += bar_chart("shared_gate_histogram_" + std::to_string(l),
                   "layer " + std::to_string(l) +
                       ": shared expert's gate sigmoid(x . w), share of tokens per tenth of [0, 1]",
                   bins, 1.0);
  }
  return s;
}

}  // namespace

std::string analysis_report_html(const json& a, const std::string& title) {
  const json& layers = a["layers"];
  std::string s =
      page_start(title) + "<p>gate: " + escape(a["gate"].get<std::string>()) + "; " +
      std::to_string(a["sequences"].get<int64_t>()) + " sequences of " +
      std::to_string(a["seq_len"].get<int>()) + " tokens" +
      (a["bos_at_position_0"].get<bool>() ? ", BOS at position 0" : "") + "; loss " +
      short_num(a["loss"].get<double>()) +
      ". The numbers are those of the analysis JSON; definitions in docs/ANALYSIS.md.</p>\n" +
      figures_table("figure", {{"model", &a}});
  s += "<h2>First-token attention per layer and head</h2>\n";
  s += bar_chart("first_token_attention",
                 "attention on position 0, mean over query positions >= 1 (dashed: uniform)",
                 per_head_bars(layers, "", "first_token_attention"), 1.0,
                 a["uniform"]["f_attn"].get<double>(), "/uniform/f_attn");
  std::vector<Bar> m_act;
  size_t gated = layers.size();  // the first layer with a gate
  for (size_t l = 0; l < layers.size(); ++l) {
    const bool linear = layers[l].value("kind", "") == "linear_attention";
    m_act.push_back({"/layers/" + std::to_string(l) + "/max_abs_hidden", "L" + std::to_string(l),
                     layers[l]["max_abs_hidden"].get<double>(), 0, linear ? 1 : 0, ""});
    if (gated == layers.size() && layers[l].contains("gate")) gated = l;
  }
  s += "<h2>Massive activations</h2>\n" +
       bar_chart("max_abs_hidden",
                 "max |hidden state| of each layer's output (orange: a Gated DeltaNet layer, no "
                 "softmax attention)",
                 m_act, 0);
  if (gated < layers.size()) {
    s += "<h2>Gate</h2>\n";
    const json& g0 = layers[gated]["gate"];
    if (g0.contains("mean_score")) {
      s += bar_chart("gate_mean_score", "mean gate score per layer and head",
                     per_head_bars(layers, "gate", "mean_score"), 0);
      s += bar_chart("gate_fraction_below", "share of scores below 0.1",
                     per_head_bars(layers, "gate", "fraction_below_0.1"), 1.0);
    }
    s += bar_chart("gate_mean_abs_before", "mean |Y| before the gate",
                   per_head_bars(layers, "gate", "mean_abs_before"), 0);
    s += bar_chart("gate_mean_abs_after", "mean |Y| after the gate",
                   per_head_bars(layers, "gate", "mean_abs_after"), 0);
    if (g0.contains("histogram")) {
      for (size_t l = 0; l < layers.size(); ++l) {
        if (!layers[l].contains("gate")) continue;
        const json& h = layers[l]["gate"]["histogram"];
        const double lo = h["low"].get<double>(), hi = h["high"].get<double>();
        const std::vector<Bar> bins =
            histogram_bars(h, "/layers/" + std::to_string(l) + "/gate/histogram");
        s += bar_chart("gate_histogram_" + std::to_string(l),
                       "layer " + std::to_string(l) + ": histogram of gate scores over [" +
                           short_num(lo) + ", " + short_num(hi) + "]",
                       bins, 0);
      }
    }
  }
  if (a.contains("delta_net_gate")) {
    s += "<h2>Gated DeltaNet layers</h2>\n";
    s += bar_chart("delta_net_mean_gate", "mean output gate silu(z) per layer and value head",
                   per_head_bars(layers, "delta_net", "mean_gate"), 0);
    s += bar_chart("delta_net_fraction_below", "share of |silu(z)| below 0.1",
                   per_head_bars(layers, "delta_net", "fraction_gate_below_0.1"), 1.0);
    s += bar_chart("delta_net_mean_decay", "mean state decay exp(g) per token",
                   per_head_bars(layers, "delta_net", "mean_decay"), 1.0);
    s += bar_chart("delta_net_mean_beta", "mean write strength beta",
                   per_head_bars(layers, "delta_net", "mean_beta"), 1.0);
  }
  if (a.contains("moe")) s += moe_section(layers);
  if (!a["attention_maps"].empty()) {
    s += "<h2>Attention maps</h2>\n";
    for (size_t i = 0; i < a["attention_maps"].size(); ++i)
      s += heatmap(a["attention_maps"][i], "/attention_maps/" + std::to_string(i));
  }
  return s + "</body></html>\n";
}

}  // namespace gattn
