#include "gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gattn::test {

std::vector<double> random_vector(size_t n, std::mt19937_64& rng, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double gradient_error(std::vector<double>& x, const std::vector<double>& analytic,
                      const std::function<double()>& loss, double h) {
  EXPECT_EQ(x.size(), analytic.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = loss();
    x[i] = saved - h;
    const double minus = loss();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    diff += (numeric - analytic[i]) * (numeric - analytic[i]);
    norm += analytic[i] * analytic[i];
  }
  EXPECT_GT(norm, 0.0) << "the analytic gradient is all zero: the check would be vacuous";
  return std::sqrt(diff / norm);
}

}  // namespace gattn::test
