// The gate op: forward against its definition and backward against finite differences, for every
// granularity, sharing, activation and mode, with per-token and shared (input-independent) scores.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "gradcheck.h"
#include "ops/gate.h"

namespace gattn {
namespace {
using test::dot;
using test::gradient_error;
using test::random_vector;

using GateCase = std::tuple<bool, bool, GateActivation, bool,
                            bool>;  // headwise, shared, act, additive, per-token z

GateShape make_shape(const GateCase& c) {
  const auto [headwise, shared, act, additive, per_token] = c;
  GateShape s{5, 3, 4, headwise, shared, additive, act, 14, 12, 0};
  s.ld_z = per_token ? s.scores() + 2 : 0;
  return s;
}

std::string case_name(const ::testing::TestParamInfo<GateCase>& info) {
  const GateShape s = make_shape(info.param);
  const char* acts[] = {"sigmoid", "silu", "identity", "ns_sigmoid"};
  return std::string(s.headwise ? "headwise" : "elementwise") +
         (s.head_shared ? "_shared_" : "_specific_") + acts[int(s.activation)] +
         (s.additive ? "_additive" : "_multiplicative") + (s.ld_z ? "_per_token" : "_parameter");
}

class Gate : public ::testing::TestWithParam<GateCase> {};

TEST_P(Gate, ForwardFollowsTheDefinition) {
  const GateShape s = make_shape(GetParam());
  std::mt19937_64 rng(21);
  const auto y = random_vector(size_t(s.rows) * s.ld_y, rng);
  const auto z = random_vector(size_t(s.rows) * (s.ld_z ? s.ld_z : 1) + s.scores(), rng, 1.5);
  std::vector<double> out(size_t(s.rows) * s.ld_y_out);
  gate_forward(out.data(), y.data(), z.data(), s);
  for (int r = 0; r < s.rows; ++r)
    for (int h = 0; h < s.heads; ++h)
      for (int c = 0; c < s.head_dim; ++c) {
        auto act = [&](int head) {
          const int j = s.headwise ? head : head * s.head_dim + c;
          return gate_activation(s.activation, z[size_t(r) * s.ld_z + j]);
        };
        double score = 0;
        if (s.head_shared) {
          for (int g = 0; g < s.heads; ++g) score += act(g) / s.heads;
        } else {
          score = act(h);
        }
        const double x = y[size_t(r) * s.ld_y + h * s.head_dim + c];
        EXPECT_NEAR(out[size_t(r) * s.ld_y_out + h * s.head_dim + c],
                    s.additive ? x + score : x * score, 1e-14);
      }
}

TEST_P(Gate, BackwardMatchesFiniteDifferences) {
  const GateShape s = make_shape(GetParam());
  std::mt19937_64 rng(22);
  const int dz_stride = s.ld_z ? s.ld_z : s.scores();
  auto y = random_vector(size_t(s.rows) * s.ld_y, rng);
  auto z = random_vector(size_t(s.rows) * (s.ld_z ? s.ld_z : 1) + s.scores(), rng, 1.5);
  const auto probe = random_vector(size_t(s.rows) * s.ld_y_out, rng);
  std::vector<double> out(probe.size()), dy(y.size(), 0.0),
      dz_rows(size_t(s.rows) * dz_stride, 0.0);
  auto loss = [&] {
    gate_forward(out.data(), y.data(), z.data(), s);
    return dot(out, probe);
  };
  gate_backward(dy.data(), dz_rows.data(), probe.data(), y.data(), z.data(), s);
  std::vector<double> dz(z.size(), 0.0);  // per-token rows, or summed over tokens for shared z
  for (int r = 0; r < s.rows; ++r)
    for (int j = 0; j < s.scores(); ++j)
      dz[size_t(r) * s.ld_z + j] += dz_rows[size_t(r) * dz_stride + j];
  EXPECT_LT(gradient_error(y, dy, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(z, dz, loss), test::kGradTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, Gate,
    ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                       ::testing::Values(GateActivation::sigmoid, GateActivation::silu,
                                         GateActivation::identity, GateActivation::ns_sigmoid),
                       ::testing::Bool(), ::testing::Bool()),
    case_name);

}  // namespace
}  // namespace gattn
