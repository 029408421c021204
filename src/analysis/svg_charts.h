// SVG pieces of the HTML reports (analysis/report_html.h): bar charts and attention heatmaps whose
// every plotted number is an element carrying the JSON pointer it was read from (data-key) and its
// value (data-value), on a scale each plot states (data-y-max over data-plot-height pixels).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gattn {

inline constexpr const char* kColours[] = {"#4c72b0", "#dd8452", "#55a868",
                                           "#c44e52", "#8172b3", "#937860"};

struct Bar {
  std::string key;    // JSON pointer of the value
  std::string label;  // under the bar
  double value;
  int group = 0;            // groups are drawn apart, each with group_label under its first bar
  int colour = 0;           // index into kColours
  std::string group_label;  // set on a group's first bar
};

std::string escape(const std::string& s);
std::string short_num(double x);  // %.4g
std::string num(double x);        // %.17g, for data-value

// A bar chart (y_max <= 0: scaled to the data); `reference` (if >= 0) is a dashed line with its
// own key.
std::string bar_chart(const std::string& id, const std::string& caption,
                      const std::vector<Bar>& bars, double y_max, double reference = -1,
                      const std::string& reference_key = "");

// One bar per (layer, head) of a per-head array inside each layer of the analysis JSON at `root`
// (at `field`, itself maybe nested under `parent`), grouped by layer, coloured by head.
std::vector<Bar> per_head_bars(const nlohmann::json& layers, const std::string& parent,
                               const std::string& field, const std::string& root = "");

// An attention map of analysis JSON at pointer `key` (layer, head, sequence, probabilities);
// captioned "WHOSE, layer L, head H" when `whose` is given, else with what the axes are.
std::string heatmap(const nlohmann::json& map, const std::string& key,
                    const std::string& whose = "");

// <html> up to <body>, a title and the shared style.
std::string page_start(const std::string& title);

// The headline figures of one or more analyses side by side (F-Attn, F-Attn from the analysis's
// from_position, Sink^eps, M-Act, gate score; "–" where an analysis has none) and the uniform-
// attention values of the first; `corner` heads the label column.
struct FiguresColumn {
  std::string name;
  const nlohmann::json* analysis;
};
std::string figures_table(const std::string& corner, const std::vector<FiguresColumn>& columns);

// One bar per bin of a gate-score histogram at `key` (low, high, counts).
std::vector<Bar> histogram_bars(const nlohmann::json& histogram, const std::string& key);

}  // namespace gattn
