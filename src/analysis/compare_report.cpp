#include "analysis/compare_report.h"

#include <algorithm>
#include <cstdint>

#include "analysis/svg_charts.h"

namespace gattn {
namespace {

using json = nlohmann::json;
const char* const kSides[2] = {"baseline", "candidate"};

json mean_of(const std::vector<const json*>& xs) {
  const json& first = *xs[0];
  if (first.is_number()) {
    double sum = 0;
    for (const json* x : xs) sum += x->get<double>();
    return sum / double(xs.size());
  }
  if (first.is_array()) {
    json out = json::array();
    for (size_t i = 0; i < first.size(); ++i) {
      std::vector<const json*> at;
      for (const json* x : xs)
        if (x->is_array() && x->size() == first.size()) at.push_back(&(*x)[i]);
      out.push_back(at.size() == xs.size() ? mean_of(at) : first[i]);
    }
    return out;
  }
  if (!first.is_object()) return first;
  json out = json::object();
  for (const auto& [key, value] : first.items()) {
    std::vector<const json*> at;
    for (const json* x : xs)
      if (x->contains(key)) at.push_back(&(*x)[key]);
    const bool as_is = key == "attention_maps" || key == "max_at" || at.size() != xs.size();
    out[key] = as_is ? value : mean_of(at);
  }
  return out;
}

std::string legend(const json& c) {
  std::string s = "<p class=\"legend\">";
  for (int m = 0; m < 2; ++m)
    s += std::string("<span style=\"color:") + kColours[m] + "\">&#9632;</span> " +
         escape(c[kSides[m]]["name"].get<std::string>()) + " &nbsp; ";
  return s + "</p>\n";
}

// Per layer, one pair of bars (baseline, candidate) per head of `field` (under `parent`).
std::vector<Bar> paired_head_bars(const json& c, const std::string& parent,
                                  const std::string& field) {
  std::vector<Bar> bars;
  const json& layers = c["baseline"]["analysis"]["layers"];
  for (size_t l = 0; l < layers.size(); ++l) {
    // Layers both sides have, with the field (a Gated DeltaNet layer has no heads or gate).
    size_t heads = SIZE_MAX;
    for (int m = 0; m < 2; ++m) {
      const json& side = c[kSides[m]]["analysis"]["layers"];
      const json* holder = l < side.size() ? &side[l] : nullptr;
      if (holder && !parent.empty())
        holder = holder->contains(parent) ? &(*holder)[parent] : nullptr;
      heads = std::min(heads, holder && holder->contains(field) ? (*holder)[field].size() : 0);
    }
    for (size_t h = 0; h < heads; ++h)
      for (int m = 0; m < 2; ++m) {
        const json& layer = c[kSides[m]]["analysis"]["layers"][l];
        const json& holder = parent.empty() ? layer : layer[parent];
        bars.push_back({"/" + std::string(kSides[m]) + "/analysis/layers/" + std::to_string(l) +
                            "/" + (parent.empty() ? "" : parent + "/") + field + "/" +
                            std::to_string(h),
                        m == 0 ? "h" + std::to_string(h) : "", holder[field][h].get<double>(),
                        int(l), m, h == 0 && m == 0 ? "layer " + std::to_string(l) : ""});
      }
  }
  return bars;
}

// The (layer, head) with the most first-token attention in a model.
std::pair<int, int> strongest_head(const json& analysis) {
  std::pair<int, int> best{0, 0};
  double top = -1;
  for (const json& layer : analysis["layers"])
    for (size_t h = 0; h < layer["first_token_attention"].size(); ++h)
      if (layer["first_token_attention"][h].get<double>() > top) {
        top = layer["first_token_attention"][h].get<double>();
        best = {layer["layer"].get<int>(), int(h)};
      }
  return best;
}

std::string maps_side_by_side(const json& c, std::pair<int, int> head) {
  std::string s;
  for (int m = 0; m < 2; ++m) {
    const json& maps = c[kSides[m]]["analysis"]["attention_maps"];
    for (size_t i = 0; i < maps.size(); ++i)
      if (maps[i]["layer"].get<int>() == head.first && maps[i]["head"].get<int>() == head.second)
        s += heatmap(maps[i],
                     "/" + std::string(kSides[m]) + "/analysis/attention_maps/" + std::to_string(i),
                     c[kSides[m]]["name"].get<std::string>());
  }
  return "<div>" + s + "</div>\n";
}

std::string gate_section(const json& c) {
  std::string s;
  for (int m = 0; m < 2; ++m) {
    const json& layers = c[kSides[m]]["analysis"]["layers"];
    size_t gated = 0;  // the first layer with a gate
    while (gated < layers.size() && !layers[gated].contains("gate")) ++gated;
    if (gated == layers.size() || !layers[gated]["gate"].contains("histogram")) continue;
    const std::string name = c[kSides[m]]["name"].get<std::string>(),
                      root = "/" + std::string(kSides[m]) + "/analysis";
    s += bar_chart(std::string(kSides[m]) + "_gate_mean_score",
                   name + ": mean gate score per layer and head",
                   per_head_bars(layers, "gate", "mean_score", root), 0);
    for (size_t l = 0; l < layers.size(); ++l) {
      if (!layers[l].contains("gate")) continue;
      const json& h = layers[l]["gate"]["histogram"];
      s += bar_chart(std::string(kSides[m]) + "_gate_histogram_" + std::to_string(l),
                     name + ", layer " + std::to_string(l) + ": gate scores over [" +
                         short_num(h["low"].get<double>()) + ", " +
                         short_num(h["high"].get<double>()) + "], mean count per run",
                     histogram_bars(h, root + "/layers/" + std::to_string(l) + "/gate/histogram"),
                     0);
    }
  }
  return s.empty() ? "" : "<h2>Gate scores</h2>\n" + s;
}

}  // namespace

json mean_analysis(const std::vector<json>& runs) {
  std::vector<const json*> xs;
  for (const json& r : runs) xs.push_back(&r);
  return xs.empty() ? json::object() : mean_of(xs);
}

json comparison_json(const std::string& baseline_name, const std::vector<json>& baseline_runs,
                     const std::string& candidate_name, const std::vector<json>& candidate_runs) {
  return {{"baseline",
           {{"name", baseline_name},
            {"seeds", baseline_runs.size()},
            {"analysis", mean_analysis(baseline_runs)}}},
          {"candidate",
           {{"name", candidate_name},
            {"seeds", candidate_runs.size()},
            {"analysis", mean_analysis(candidate_runs)}}}};
}

std::string comparison_report_html(const json& c, const std::string& title) {
  const json& a = c["baseline"]["analysis"];
  std::string s =
      page_start(title) + "<p>" + escape(c["baseline"]["name"].get<std::string>()) + " against " +
      escape(c["candidate"]["name"].get<std::string>()) + ", " +
      std::to_string(c["baseline"]["seeds"].get<int>()) +
      " seed(s) each; every figure is the mean over seeds of the analysis of the "
      "first " +
      short_num(a["sequences"].get<double>()) + " validation windows of " +
      short_num(a["seq_len"].get<double>()) +
      " tokens (attention maps: the first seed, first sequence). F-Attn leaves out "
      "the first query, which can only attend to itself. Definitions: "
      "docs/ANALYSIS.md.</p>\n" +
      figures_table("mean over seeds",
                    {{c["baseline"]["name"].get<std::string>(), &a},
                     {c["candidate"]["name"].get<std::string>(), &c["candidate"]["analysis"]}});
  s += "<h2>First-token attention per layer and head</h2>\n" + legend(c);
  s += bar_chart("first_token_attention",
                 "attention on position 0, mean over query positions >= 1 (dashed: uniform "
                 "attention)",
                 paired_head_bars(c, "", "first_token_attention"), 0,
                 a["uniform"]["f_attn"].get<double>(), "/baseline/analysis/uniform/f_attn");
  s += "<h2>Attention maps of the same heads</h2>\n";
  const auto first = strongest_head(a), second = strongest_head(c["candidate"]["analysis"]);
  s += "<p>The baseline's strongest first-token head (layer " + std::to_string(first.first) +
       ", head " + std::to_string(first.second) + ")";
  s += second != first ? " and the candidate's (layer " + std::to_string(second.first) + ", head " +
                             std::to_string(second.second) + ")"
                       : std::string("");
  s += ", in both models: the first seed's first sequence, its first " +
       std::to_string(
           a["attention_maps"].empty() ? 0 : a["attention_maps"][0]["positions"].get<int>()) +
       " positions; row: query, column: key, darker: more attention.</p>\n" +
       maps_side_by_side(c, first);
  if (second != first) s += maps_side_by_side(c, second);
  std::vector<Bar> m_act;
  for (size_t l = 0; l < a["layers"].size(); ++l)
    for (int m = 0; m < 2; ++m)
      m_act.push_back({"/" + std::string(kSides[m]) + "/analysis/layers/" + std::to_string(l) +
                           "/max_abs_hidden",
                       m == 0 ? "L" + std::to_string(l) : "",
                       c[kSides[m]]["analysis"]["layers"][l]["max_abs_hidden"].get<double>(),
                       int(l), m, ""});
  s += "<h2>Massive activations</h2>\n" + legend(c) +
       bar_chart("max_abs_hidden", "max |hidden state| of each layer's output", m_act, 0);
  return s + gate_section(c) + "</body></html>\n";
}

}  // namespace gattn
