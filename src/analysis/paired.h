// Paired comparisons: two models scored on the same items (validation windows, seeds), so the
// item-to-item variation cancels and only the difference's own spread remains.
#pragma once
#include <cmath>
#include <string>
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

double mean(const std::vector<double>& x);
double sample_sd(const std::vector<double>& x);  // 0 for fewer than two values

// Whether candidate - baseline (one value per seed, paired by seed) stands out of seed noise: every
// seed's difference has the same sign and the mean difference exceeds twice the larger
// seed-to-seed standard deviation of either arm. Needs at least two seeds.
struct SeedVerdict {
  double mean_difference = 0;
  double seed_sd = 0;        // the larger of the two arms' sd over seeds
  bool measured = false;     // at least two seeds
  bool seeds_agree = false;  // every seed's difference has the sign of the mean
  bool beyond_noise = false;
  std::string text() const;
};
SeedVerdict seed_verdict(const std::vector<double>& baseline, const std::vector<double>& candidate);

}  // namespace gattn
