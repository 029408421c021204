#include "analysis/paired.h"

#include <algorithm>
#include <cstdio>

#include "util/error.h"

namespace gattn {

PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) fail("paired comparison of ", a.size(), " and ", b.size(), " items");
  PairedDifference d;
  d.n = int(a.size());
  if (d.n == 0) return d;
  std::vector<double> diff(a.size());
  for (size_t i = 0; i < a.size(); ++i) diff[i] = b[i] - a[i];
  d.mean = mean(diff);
  d.standard_error = sample_sd(diff) / std::sqrt(double(d.n));
  return d;
}

double mean(const std::vector<double>& x) {
  double sum = 0;
  for (double v : x) sum += v;
  return x.empty() ? 0 : sum / double(x.size());
}

double sample_sd(const std::vector<double>& x) {
  if (x.size() < 2) return 0;
  const double m = mean(x);
  double sq = 0;
  for (double v : x) sq += (v - m) * (v - m);
  return std::sqrt(sq / double(x.size() - 1));
}

SeedVerdict seed_verdict(const std::vector<double>& baseline,
                         const std::vector<double>& candidate) {
  if (baseline.size() != candidate.size())
    fail("seed comparison of ", baseline.size(), " and ", candidate.size(), " runs");
  SeedVerdict v;
  std::vector<double> diff(baseline.size());
  for (size_t i = 0; i < diff.size(); ++i) diff[i] = candidate[i] - baseline[i];
  v.mean_difference = mean(diff);
  v.measured = diff.size() >= 2;
  v.seed_sd = std::max(sample_sd(baseline), sample_sd(candidate));
  v.seeds_agree =
      std::all_of(diff.begin(), diff.end(), [&](double d) { return d * v.mean_difference > 0; });
  v.beyond_noise = v.measured && v.seeds_agree && std::abs(v.mean_difference) > 2 * v.seed_sd;
  return v;
}

std::string SeedVerdict::text() const {
  if (!measured) return "seed noise not measured (one seed per model)";
  char line[256];
  if (beyond_noise)
    std::snprintf(line, sizeof line,
                  "beyond seed noise: every seed agrees in sign and |difference| > 2 x the "
                  "seed-to-seed sd (%.4f)",
                  seed_sd);
  else if (!seeds_agree)
    std::snprintf(line, sizeof line, "within seed noise: the seeds disagree in sign");
  else
    std::snprintf(line, sizeof line,
                  "within seed noise: |difference| <= 2 x the seed-to-seed sd (%.4f)", seed_sd);
  return line;
}

}  // namespace gattn
