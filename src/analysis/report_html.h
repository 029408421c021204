// The HTML report of `gattn analyze`: one self-contained page of inline SVG plots drawn from the
// analysis JSON. Every plotted number is an SVG element carrying the JSON path it was read from
// (data-key, a JSON pointer) and its value (data-value); each plot states its scale
// (data-y-max over data-plot-height pixels), so a test can check the picture against the JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace gattn {

std::string analysis_report_html(const nlohmann::json& analysis, const std::string& title);

}  // namespace gattn
