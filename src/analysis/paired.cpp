#include "analysis/paired.h"

#include "util/error.h"

namespace gattn {

PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) fail("paired comparison of ", a.size(), " and ", b.size(), " items");
  PairedDifference d;
  d.n = int(a.size());
  if (d.n == 0) return d;
  for (size_t i = 0; i < a.size(); ++i) d.mean += b[i] - a[i];
  d.mean /= d.n;
  if (d.n < 2) return d;
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) sq += (b[i] - a[i] - d.mean) * (b[i] - a[i] - d.mean);
  d.standard_error = std::sqrt(sq / (d.n - 1) / d.n);
  return d;
}

}  // namespace gattn
