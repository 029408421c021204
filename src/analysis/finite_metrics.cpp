#include "analysis/finite_metrics.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace gattn {

void require_finite_metrics(const nlohmann::json& metrics, const std::string& what) {
  // Depth first, in document order, with an explicit stack.
  std::vector<std::pair<const nlohmann::json*, std::string>> pending{{&metrics, ""}};
  while (!pending.empty()) {
    const auto [value, path] = pending.back();
    pending.pop_back();
    if (value->is_number_float() && !std::isfinite(value->get<double>()))
      fail(what, ": metric ", path, " is not finite (", value->get<double>(),
           "): do the weights overflow?");
    std::vector<std::pair<const nlohmann::json*, std::string>> children;
    if (value->is_object())
      for (const auto& [key, child] : value->items())
        children.emplace_back(&child, path.empty() ? key : path + "." + key);
    if (value->is_array())
      for (size_t i = 0; i < value->size(); ++i)
        children.emplace_back(&(*value)[i], cat(path, "[", i, "]"));
    pending.insert(pending.end(), children.rbegin(), children.rend());
  }
}

}  // namespace gattn
