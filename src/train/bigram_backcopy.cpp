#include "train/bigram_backcopy.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "io/file.h"
#include "io/token_shard.h"
#include "util/error.h"

namespace gattn {
namespace {

double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

int sample_row(const double* row, int n, std::mt19937_64& rng) {
  double u = uniform01(rng);
  for (int j = 0; j < n - 1; ++j) {
    if (u < row[j]) return j;
    u -= row[j];
  }
  return n - 1;
}

}  // namespace

BigramBackcopyChain make_bigram_backcopy_chain(const BigramBackcopySpec& spec) {
  if (spec.vocab < 4) fail("bigram-backcopy: vocab must be at least 4, got ", spec.vocab);
  if (spec.triggers < 1 || spec.triggers > spec.vocab / 2)
    fail("bigram-backcopy: triggers must be in [1, vocab / 2 = ", spec.vocab / 2, "], got ",
         spec.triggers);
  if (!(spec.concentration > 0))
    fail("bigram-backcopy: concentration must be positive, got ", spec.concentration);
  const int v = spec.vocab;
  BigramBackcopyChain c;
  c.spec = spec;
  c.transition.resize(size_t(v) * v);
  std::mt19937_64 rng(spec.chain_seed);
  std::gamma_distribution<double> gamma(spec.concentration, 1.0);
  for (int i = 0; i < v; ++i) {
    double* row = &c.transition[size_t(i) * v];
    double sum = 0;
    for (int j = 0; j < v; ++j) sum += row[j] = gamma(rng) + 1e-300;
    for (int j = 0; j < v; ++j) row[j] /= sum;
  }
  c.stationary.assign(v, 1.0 / v);
  std::vector<double> next(v);
  for (int it = 0; it < 2000; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int i = 0; i < v; ++i)
      for (int j = 0; j < v; ++j) next[j] += c.stationary[i] * c.transition[size_t(i) * v + j];
    c.stationary.swap(next);
  }
  std::vector<int> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return c.stationary[a] > c.stationary[b]; });
  c.triggers.assign(order.begin(), order.begin() + spec.triggers);
  std::sort(c.triggers.begin(), c.triggers.end());
  c.is_trigger.assign(v, false);
  for (int t : c.triggers) c.is_trigger[t] = true;
  return c;
}

BigramBackcopyStream sample_bigram_backcopy(const BigramBackcopyChain& chain, uint64_t length,
                                            uint64_t seed) {
  const int v = chain.spec.vocab;
  std::mt19937_64 rng(seed);
  BigramBackcopyStream s;
  s.tokens.reserve(length + 1);
  s.tokens.push_back(uint32_t(v));  // BOS
  double nats = 0;
  uint64_t copies = 0;
  int before = -1, current = -1;
  for (uint64_t i = 0; i < length; ++i) {
    int next;
    if (current < 0) {  // the first token: uniform over the non-triggers
      do next = int(rng() % uint64_t(v));
      while (chain.is_trigger[next]);
      nats += std::log(double(v - chain.spec.triggers));
    } else if (chain.is_trigger[current]) {
      next = before;  // deterministic: costs a perfect model nothing
      ++copies;
    } else {
      const double* row = &chain.transition[size_t(current) * v];
      next = sample_row(row, v, rng);
      nats -= std::log(row[next]);
    }
    s.tokens.push_back(uint32_t(next));
    before = current;
    current = next;
  }
  s.entropy_nats = length ? nats / double(length) : 0;
  s.trigger_share = length ? double(copies) / double(length) : 0;
  return s;
}

std::string write_bigram_backcopy(const BigramBackcopySpec& spec, uint64_t train_tokens,
                                  uint64_t val_tokens, uint64_t seed, const std::string& dir) {
  if (train_tokens < 2 || val_tokens < 2)
    fail("bigram-backcopy: train and val need at least 2 tokens each");
  const BigramBackcopyChain chain = make_bigram_backcopy_chain(spec);
  std::filesystem::create_directories(dir);
  nlohmann::ordered_json j = {{"source", "bigram-backcopy"},
                              {"vocab", spec.vocab},
                              {"bos_id", spec.vocab},
                              {"triggers", chain.triggers},
                              {"concentration", spec.concentration},
                              {"chain_seed", spec.chain_seed},
                              {"seed", seed}};
  const std::pair<const char*, uint64_t> splits[] = {{"train", train_tokens}, {"val", val_tokens}};
  for (int split = 0; split < 2; ++split) {
    const auto [name, length] = splits[split];
    // Distinct sampling streams for train and val, the same chain.
    const BigramBackcopyStream s = sample_bigram_backcopy(chain, length, seed * 2 + split);
    write_token_shard(dir + "/" + name + ".bin", s.tokens, {0}, uint32_t(spec.vocab + 1),
                      uint32_t(spec.vocab), 0);
    j[name] = {{"tokens", length},
               {"entropy_nats_per_token", s.entropy_nats},
               {"copy_share", s.trigger_share}};
  }
  const std::string text = j.dump(2) + "\n";
  write_text_file_atomically(dir + "/source.json", text);
  return text;
}

}  // namespace gattn
