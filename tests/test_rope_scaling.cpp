// RoPE context extension (linear, NTK-aware, YaRN) against Hugging Face transformers' own
// frequencies (tests/fixtures/rope_scaling.json, tools/reference/make_rope_scaling_fixture.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "ops/rope.h"
#include "util/error.h"

namespace gattn {
namespace {

using nlohmann::json;

TEST(RopeScaling, MatchesHuggingFace) {
  std::ifstream in(std::string(GATTN_FIXTURE_DIR) + "/rope_scaling.json");
  ASSERT_TRUE(in) << "missing fixture rope_scaling.json";
  const json cases = json::parse(in);
  ASSERT_GE(cases.size(), 6u);
  for (const json& c : cases) {
    const RopeScaling scaling = rope_scaling_from_json(c["rope_scaling"], "fixture");
    const int rotary_dim = c["rotary_dim"].get<int>();
    double attention_factor = 0;
    const std::vector<double> inv_freq =
        rope_inverse_frequencies(rotary_dim, c["theta"].get<double>(), scaling, &attention_factor);
    ASSERT_EQ(inv_freq.size(), c["inv_freq"].size()) << c["rope_scaling"].dump();
    for (size_t i = 0; i < inv_freq.size(); ++i)  // HF computes in float32
      EXPECT_NEAR(inv_freq[i], c["inv_freq"][i].get<double>(), 1e-6 * inv_freq[i])
          << c["rope_scaling"].dump() << " pair " << i;
    EXPECT_NEAR(attention_factor, c["attention_factor"].get<double>(), 1e-12);
    // The table carries the attention factor on cos and sin.
    const RopeTable<double> t =
        make_rope_table<double>(rotary_dim, c["theta"].get<double>(), 8, scaling);
    const int half = rotary_dim / 2;
    EXPECT_NEAR(std::hypot(t.cos[5 * half + 1], t.sin[5 * half + 1]), attention_factor, 1e-12);
    EXPECT_NEAR(std::atan2(t.sin[1 * half + 2], t.cos[1 * half + 2]), inv_freq[2], 1e-12);
  }
}

TEST(RopeScaling, UnscaledTableIsUnchangedAndBadInputIsNamed) {
  const RopeTable<double> plain = make_rope_table<double>(8, 100.0, 4);
  const RopeTable<double> none = make_rope_table<double>(8, 100.0, 4, RopeScaling{});
  EXPECT_EQ(plain.cos, none.cos);
  auto error_of = [](const json& j) {
    try {
      rope_scaling_from_json(j, "c.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(nullptr), "");
  EXPECT_NE(
      error_of({{"rope_type", "longrope"}, {"factor", 2}}).find("'rope_type': expected one of"),
      std::string::npos);
  EXPECT_NE(
      error_of({{"rope_type", "yarn"}, {"factor", 2}}).find("original_max_position_embeddings"),
      std::string::npos);
  EXPECT_NE(error_of({{"rope_type", "ntk"}, {"factor", 0.5}}).find("'factor'"), std::string::npos);
  EXPECT_NE(error_of({{"rope_type", "ntk"}}).find("'factor' is required"), std::string::npos);
  EXPECT_NE(
      error_of({{"rope_type", "linear"}, {"factor", 2}, {"beta", 1}}).find("unknown field 'beta'"),
      std::string::npos);
}

}  // namespace
}  // namespace gattn
