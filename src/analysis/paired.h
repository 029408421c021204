// Paired comparisons: two models scored on the same items (validation windows, seeds), so the
// item-to-item variation cancels and only the difference's own spread remains.
#pragma once
#include <cmath>
#include <vector>

namespace gattn {

struct PairedDifference {
  double mean = 0;            // mean of b_i - a_i
  double standard_error = 0;  // sd(b - a) / sqrt(n); 0 when n < 2
  int n = 0;
  // |mean| is below two standard errors: the data cannot tell the two apart.
  bool within_noise() const { return n < 2 || std::abs(mean) < 2 * standard_error; }
};

PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace gattn
