// The sampler's filters against direct implementations on fixed logits, temperature 0 as greedy,
// reproducibility with a seed, and the empirical distribution of draws.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "infer/sampler.h"
#include "util/error.h"

namespace gattn {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, -2.0f, 2.5f, 0.0f, 3.0f, -1.0f, 0.5f};

std::vector<double> probs_of(const std::vector<float>& logits) {
  return softmax(std::span(logits), 1.0);
}

// Direct: the tokens whose probability is among the k largest values (ties with the k-th kept).
std::vector<bool> top_k_set(const std::vector<double>& p, int k) {
  std::vector<double> sorted = p;
  std::sort(sorted.rbegin(), sorted.rend());
  std::vector<bool> keep(p.size());
  for (size_t i = 0; i < p.size(); ++i) keep[i] = p[i] >= sorted[k - 1];
  return keep;
}

// Direct: a token is kept when the mass of the strictly more likely tokens is below top_p.
std::vector<bool> top_p_set(const std::vector<double>& p, double top_p) {
  std::vector<bool> keep(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    double above = 0;
    for (size_t j = 0; j < p.size(); ++j)
      if (p[j] > p[i] || (p[j] == p[i] && j < i)) above += p[j];
    keep[i] = above < top_p;
  }
  return keep;
}

void expect_kept(const std::vector<double>& filtered, const std::vector<double>& before,
                 const std::vector<bool>& keep) {
  double mass = 0;
  for (size_t i = 0; i < before.size(); ++i) mass += keep[i] ? before[i] : 0;
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_NEAR(filtered[i], keep[i] ? before[i] / mass : 0.0, 1e-12) << "token " << i;
}

TEST(Sampler, TopKKeepsTheKMostLikelyAndTies) {
  const std::vector<double> p = probs_of(kLogits);
  for (int k : {1, 2, 3, 5, 8}) {
    std::vector<double> q = p;
    keep_top_k(q, k);
    expect_kept(q, p, top_k_set(p, k));
  }
}

TEST(Sampler, TopPKeepsTheSmallestSetWithThatMass) {
  const std::vector<double> p = probs_of(kLogits);
  for (double top_p : {0.05, 0.3, 0.5, 0.8, 0.95, 0.999}) {
    std::vector<double> q = p;
    keep_top_p(q, top_p);
    expect_kept(q, p, top_p_set(p, top_p));
  }
}

TEST(Sampler, MinPKeepsTokensAboveAFractionOfTheMax) {
  const std::vector<double> p = probs_of(kLogits);
  const double max = *std::max_element(p.begin(), p.end());
  for (double min_p : {0.05, 0.2, 0.5, 1.0}) {
    std::vector<double> q = p;
    keep_min_p(q, min_p);
    std::vector<bool> keep(p.size());
    for (size_t i = 0; i < p.size(); ++i) keep[i] = p[i] >= min_p * max;
    expect_kept(q, p, keep);
  }
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  std::vector<float> logits = kLogits;
  const std::vector<uint32_t> history = {1, 2, 1, 99};  // 99: beyond the vocabulary, ignored
  apply_repeat_penalty(logits, history, 2.0);
  EXPECT_EQ(logits[1], 1.5f);  // once, though seen twice
  EXPECT_EQ(logits[2], -4.0f);
  EXPECT_EQ(logits[0], 1.0f);
}

TEST(Sampler, TemperatureZeroIsGreedyAndSeedsReproduce) {
  std::vector<float> logits = kLogits;
  Sampler greedy({.temperature = 0});
  EXPECT_EQ(greedy.next(logits, {}), 1u);  // the first of the two 3.0s
  auto draws = [](uint64_t seed) {
    Sampler s({.temperature = 0.8, .top_k = 5, .top_p = 0.9, .seed = seed});
    std::vector<uint32_t> out;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> l = kLogits;
      out.push_back(s.next(l, {}));
    }
    return out;
  };
  EXPECT_EQ(draws(7), draws(7));
  EXPECT_NE(draws(7), draws(8));
}

// 20,000 draws at temperature 2 match softmax(logits / 2) within 5 standard errors per token.
TEST(Sampler, DrawsFollowTheDistribution) {
  const int n = 20000;
  Sampler s({.temperature = 2.0, .seed = 3});
  std::vector<int> counts(kLogits.size());
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = kLogits;
    ++counts[s.next(l, {})];
  }
  const std::vector<double> p = softmax(std::span(kLogits), 2.0);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(counts[i] / double(n), p[i], 5 * std::sqrt(p[i] * (1 - p[i]) / n)) << i;
}

// NaN or infinite logits (weights or activations that overflowed) are an Error naming where,
// greedy or sampled: never the token that compares largest, nor the last id NaN draws pick.
TEST(Sampler, NonFiniteLogitsAreAnErrorNamingThePositionAndTheToken) {
  const std::vector<uint32_t> history = {4, 1, 7};
  for (float bad : {std::nanf(""), INFINITY, -INFINITY})
    for (double temperature : {0.0, 1.0}) {
      std::vector<float> logits = kLogits;
      logits[6] = bad;
      Sampler s({.temperature = temperature});
      try {
        const uint32_t token = s.next(logits, history);
        ADD_FAILURE() << bad << " at temperature " << temperature << " gave token " << token;
      } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("logits for the token at position 3 are not finite"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("for token id 6 of 8"), std::string::npos) << message;
      }
    }
}

TEST(Sampler, RejectsBadOptions) {
  EXPECT_THROW(Sampler({.temperature = -1}), Error);
  EXPECT_THROW(Sampler({.top_k = -1}), Error);
  EXPECT_THROW(Sampler({.top_p = 0}), Error);
  EXPECT_THROW(Sampler({.min_p = 1.5}), Error);
  EXPECT_THROW(Sampler({.repeat_penalty = 0}), Error);
}

}  // namespace
}  // namespace gattn
