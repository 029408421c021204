// The analysis metrics are numbers people compare across runs: a NaN or infinity among them means
// a broken model, so it is an error naming the metric instead of a value printed as "nan".
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace gattn {

// Fails with `what` and the path of the first non-finite number in `metrics`
// (e.g. "layers[1].f_attn").
void require_finite_metrics(const nlohmann::json& metrics, const std::string& what);

}  // namespace gattn
