// Finite-difference gradient checks in double precision for the ops' hand-written backward passes.
#pragma once
#include <functional>
#include <random>
#include <vector>

namespace gattn::test {

std::vector<double> random_vector(size_t n, std::mt19937_64& rng, double scale = 1.0);

// ||central difference - analytic||_2 / ||analytic||_2 over every element of x, where loss() reads
// x. Fails the current test if the analytic gradient is all zero (a vacuous check).
double gradient_error(std::vector<double>& x, const std::vector<double>& analytic,
                      const std::function<double()>& loss, double h = 1e-5);

double dot(const std::vector<double>& a, const std::vector<double>& b);

// Central differences are exact to ~1e-10 here; a wrong gradient is off by O(1).
inline constexpr double kGradTolerance = 1e-7;

}  // namespace gattn::test
