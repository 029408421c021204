#include "serve/pass_cost.h"

#include <algorithm>
#include <stdexcept>

namespace gattn {

void LineCost::record(double seconds, double units) {
  constexpr double kKeep = 0.95;  // about the last 20 samples
  for (double* sum : {&w_, &sx_, &sy_, &sxx_, &sxy_}) *sum *= kKeep;
  w_ += 1;
  sx_ += units;
  sy_ += seconds;
  sxx_ += units * units;
  sxy_ += units * seconds;
}

double LineCost::per_unit() const {
  const double mx = sx_ / w_, my = sy_ / w_, var = sxx_ / w_ - mx * mx;
  const double proportional = my / mx;
  if (!(var > 0.25 && var > 1e-4 * mx * mx)) return proportional;
  return std::clamp((sxy_ / w_ - mx * my) / var, proportional * 1e-3, proportional);
}

double LineCost::seconds(double units) const {
  const double b = per_unit(), fixed = std::max(0.0, sy_ / w_ - b * sx_ / w_);
  return fixed + b * units;
}

void RowsCost::record(int rows, double seconds) {
  if (rows < 1) throw std::invalid_argument("RowsCost: a pass has at least one row");
  constexpr double kKeep = 0.9;  // about the last 10 passes of this row count
  if (rows >= int(weight_.size())) {
    weight_.resize(size_t(rows) + 1, 0.0);
    sum_.resize(size_t(rows) + 1, 0.0);
  }
  if (weight_[rows] == 0) measured_.insert(std::ranges::upper_bound(measured_, rows), rows);
  weight_[rows] = weight_[rows] * kKeep + 1;
  sum_[rows] = sum_[rows] * kKeep + seconds;
}

double RowsCost::seconds(int rows) const {
  if (measured_.empty()) return 0;
  const auto above = std::ranges::lower_bound(measured_, rows);
  if (above != measured_.end() && *above == rows) return mean(rows);
  if (above == measured_.begin()) return mean(*above) * rows / *above;
  const int lo = *std::prev(above);
  if (above == measured_.end()) return mean(lo) + (rows - lo) * (mean(lo) / lo);
  const int hi = *above;
  return mean(lo) + (mean(hi) - mean(lo)) * (rows - lo) / (hi - lo);
}

}  // namespace gattn
