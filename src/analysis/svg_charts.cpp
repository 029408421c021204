#include "analysis/svg_charts.h"

#include <algorithm>
#include <cstdio>

namespace gattn {

using nlohmann::json;

namespace {
constexpr double kPlotHeight = 160;  // pixels of the value axis
constexpr double kBarWidth = 14;
constexpr double kLeft = 48, kTop = 10, kBottom = 34;

std::string px(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

}  // namespace

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string short_num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// A bar chart; `reference` (if >= 0) is drawn as a dashed line, with its own key.
std::string bar_chart(const std::string& id, const std::string& caption,
                      const std::vector<Bar>& bars, double y_max, double reference,
                      const std::string& reference_key) {
  double top = y_max;
  if (top <= 0) {
    for (const Bar& b : bars) top = std::max(top, b.value);
    top = std::max(top, reference) * 1.1;
    if (top <= 0) top = 1;
  }
  const double width =
      kLeft + (bars.size() + 1) * (kBarWidth + 2) + 10 * (bars.empty() ? 0 : bars.back().group);
  std::string s = "<figure><figcaption>" + escape(caption) + "</figcaption>\n<svg id=\"" + id +
                  "\" class=\"plot\" data-y-max=\"" + num(top) + "\" data-plot-height=\"" +
                  num(kPlotHeight) + "\" width=\"" + px(width + 20) + "\" height=\"" +
                  px(kTop + kPlotHeight + kBottom) + "\">\n";
  const double base = kTop + kPlotHeight;
  s += "<line x1=\"" + px(kLeft) + "\" y1=\"" + px(base) + "\" x2=\"" + px(width) + "\" y2=\"" +
       px(base) + "\" stroke=\"#333\"/>\n";
  s += "<text x=\"2\" y=\"" + px(kTop + 8) + "\" font-size=\"10\">" + short_num(top) +
       "</text><text x=\"2\" y=\"" + px(base) + "\" font-size=\"10\">0</text>\n";
  double x = kLeft + 4;
  for (size_t i = 0; i < bars.size(); ++i) {
    if (i > 0 && bars[i].group != bars[i - 1].group) x += 10;
    if (!bars[i].group_label.empty())
      s += "<text x=\"" + px(x) + "\" y=\"" + px(base + 24) + "\" font-size=\"10\">" +
           escape(bars[i].group_label) + "</text>\n";
    const double h = std::clamp(bars[i].value, 0.0, top) / top * kPlotHeight;
    s += "<rect class=\"bar\" data-key=\"" + bars[i].key + "\" data-value=\"" + num(bars[i].value) +
         "\" x=\"" + px(x) + "\" y=\"" + px(base - h) + "\" width=\"" + px(kBarWidth) +
         "\" height=\"" + px(h) + "\" fill=\"" + kColours[bars[i].colour % 6] + "\"><title>" +
         escape(bars[i].label) + ": " + num(bars[i].value) + "</title></rect>\n";
    s += "<text x=\"" + px(x) + "\" y=\"" + px(base + 12) + "\" font-size=\"9\">" +
         escape(bars[i].label) + "</text>\n";
    x += kBarWidth + 2;
  }
  if (reference >= 0) {
    const double y = base - std::min(reference, top) / top * kPlotHeight;
    s += "<line class=\"reference\" data-key=\"" + reference_key + "\" data-value=\"" +
         num(reference) + "\" x1=\"" + px(kLeft) + "\" y1=\"" + px(y) + "\" x2=\"" + px(width) +
         "\" y2=\"" + px(y) + "\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n";
  }
  return s + "</svg></figure>\n";
}

// One bar per (layer, head) of a per-head array inside each layer (at `field`, itself maybe
// nested under "gate"), grouped by layer.
std::vector<Bar> per_head_bars(const json& layers, const std::string& parent,
                               const std::string& field, const std::string& root) {
  std::vector<Bar> bars;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (!parent.empty() && !layers[l].contains(parent)) continue;  // e.g. a layer with no gate
    const json& holder = parent.empty() ? layers[l] : layers[l][parent];
    const json& values = holder[field];
    const std::string prefix = root + "/layers/" + std::to_string(l) + "/" +
                               (parent.empty() ? "" : parent + "/") + field + "/";
    for (size_t h = 0; h < values.size(); ++h)
      bars.push_back({prefix + std::to_string(h), "h" + std::to_string(h), values[h].get<double>(),
                      int(l), int(h), h == 0 ? "layer " + std::to_string(l) : ""});
  }
  return bars;
}

std::string heatmap(const json& map, const std::string& key, const std::string& whose) {
  const json& p = map["probabilities"];
  const size_t n = p.size();
  constexpr double cell = 5;
  const std::string where = "layer " + std::to_string(map["layer"].get<int>()) + ", head " +
                            std::to_string(map["head"].get<int>());
  const std::string caption =
      whose.empty()
          ? "attention map, " + where + " (first " + std::to_string(n) + " positions of sequence " +
                std::to_string(map["sequence"].get<int>()) + "; row: query, column: key)"
          : whose + ", " + where;
  std::string s = "<figure><figcaption>" + escape(caption) +
                  "</figcaption>\n<svg class=\"heatmap\" width=\"" + px(n * cell) + "\" height=\"" +
                  px(n * cell) + "\">\n";
  const std::string prefix = key + "/probabilities/";
  for (size_t q = 0; q < n; ++q)
    for (size_t k = 0; k <= q && k < p[q].size(); ++k) {
      const double v = p[q][k].get<double>();
      const int shade = int(255 - std::clamp(v, 0.0, 1.0) * 255);
      s += "<rect data-key=\"" + prefix + std::to_string(q) + "/" + std::to_string(k) +
           "\" data-value=\"" + num(v) + "\" x=\"" + px(k * cell) + "\" y=\"" + px(q * cell) +
           "\" width=\"5\" height=\"5\" fill=\"rgb(" + std::to_string(shade) + "," +
           std::to_string(shade) + ",255)\"/>\n";
    }
  return s + "</svg></figure>\n";
}

std::string figures_table(const std::string& corner, const std::vector<FiguresColumn>& columns) {
  const nlohmann::json& first = *columns.at(0).analysis;
  std::string s = "<table><tr><th>" + escape(corner) + "</th>";
  for (const auto& c : columns) s += "<th>" + escape(c.name) + "</th>";
  s += "<th>uniform attention</th></tr>\n";
  auto row = [&](const std::string& label, const char* key, bool uniform) {
    s += "<tr><td>" + escape(label) + "</td>";
    for (const auto& c : columns)
      s += "<td>" +
           (c.analysis->contains(key) ? short_num((*c.analysis)[key].get<double>()) : "–") +
           "</td>";
    s += "<td>" + (uniform ? short_num(first["uniform"][key].get<double>()) : "") + "</td></tr>\n";
  };
  row("F-Attn", "f_attn", true);
  row("F-Attn, queries >= " + short_num(first["from_position"].get<double>()), "f_attn_from_k",
      true);
  row("Sink^" + short_num(first["sink_threshold"].get<double>()), "sink_fraction", true);
  row("M-Act", "m_act", false);
  row("gate score", "gate_score", false);
  return s + "</table>\n";
}

std::string page_start(const std::string& title) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(title) +
         "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:80em}"
         "figure{display:inline-block;margin:1em;vertical-align:top}figcaption{font-size:0.9em}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:0.2em 0.6em}</style>"
         "</head><body>\n<h1>" +
         escape(title) + "</h1>\n";
}

std::vector<Bar> histogram_bars(const json& h, const std::string& key) {
  std::vector<Bar> bins;
  const double lo = h["low"].get<double>(), hi = h["high"].get<double>();
  const size_t n = h["counts"].size();
  for (size_t b = 0; b < n; ++b) {
    char label[16];
    std::snprintf(label, sizeof label, "%.2g", lo + (hi - lo) * double(b) / double(n));
    bins.push_back({key + "/counts/" + std::to_string(b), b % 5 == 0 ? label : "",
                    h["counts"][b].get<double>(), 0, 0, ""});
  }
  return bins;
}

}  // namespace gattn
