// The side-by-side report of `gattn compare --html`: a baseline and a candidate model, each the
// mean over its seeds of the analysis JSON (analysis/analyze.h), drawn on shared axes: per-head
// first-token attention with the uniform line, the same heads' attention maps next to each other,
// M-Act per layer, gate scores and their histograms. Like the analysis report, every plotted
// number carries its JSON pointer into the comparison JSON and its value (analysis/svg_charts.h).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gattn {

// The analyses of one model's runs averaged leaf by leaf (numbers and arrays of them); the first
// run's attention maps and max_at are kept as they are.
nlohmann::json mean_analysis(const std::vector<nlohmann::json>& runs);

// {"baseline": {"name", "seeds", "analysis"}, "candidate": {...}}: the comparison JSON.
nlohmann::json comparison_json(const std::string& baseline_name,
                               const std::vector<nlohmann::json>& baseline_runs,
                               const std::string& candidate_name,
                               const std::vector<nlohmann::json>& candidate_runs);

std::string comparison_report_html(const nlohmann::json& comparison, const std::string& title);

}  // namespace gattn
