// Config parsing: defaults, the table of valid gate combinations, and a clear error for each kind
// of bad input, naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "util/error.h"

namespace gattn {
namespace {
using json = nlohmann::json;

json base() {
  return {{"vocab_size", 64},         {"hidden_size", 32},        {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 48}};
}

// The message of the Error that parsing j throws ("" if none).
std::string error_of(const json& j) {
  try {
    config_from_json(j, "cfg.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsFollowHuggingFace) {
  json j = base();
  j.erase("num_key_value_heads");
  const Config c = config_from_json(j, "cfg.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rotary_dim(), 8);
  EXPECT_TRUE(c.use_qk_norm);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.gate.enabled());
  EXPECT_EQ(c.block_output_clip, 0);
}

TEST(Config, RoundTripsThroughJson) {
  json j = base();
  j["gate"] = {{"position", "query"}, {"granularity", "headwise"}, {"after_qk_norm", true}};
  j["block_output_clip"] = 100.0;
  j["partial_rotary_factor"] = 0.5;
  const Config c = config_from_json(j, "cfg.json");
  const Config again = config_from_json(config_to_json(c), "again");
  EXPECT_EQ(config_to_json(again), config_to_json(c));
  EXPECT_TRUE(again.gate.after_qk_norm);
  EXPECT_TRUE(again.gate.headwise);
  EXPECT_EQ(again.block_output_clip, 100.0);
  EXPECT_EQ(again.rotary_dim(), 4);
}

TEST(Config, PartialRotaryFactorZeroMeansNoRope) {
  json j = base();
  j["partial_rotary_factor"] = 0.0;
  const Config c = config_from_json(j, "cfg.json");
  EXPECT_EQ(c.rotary_dim(), 0);
  EXPECT_EQ(config_from_json(config_to_json(c), "again").rotary_dim(), 0);
}

TEST(Config, AcceptsEveryValidGateCombination) {
  int accepted = 0;
  for (const char* position : {"sdpa", "value", "key", "query", "dense"})
    for (const char* kind : {"input_dependent", "input_independent", "ns_sigmoid"})
      for (const char* granularity : {"elementwise", "headwise"})
        for (const char* sharing : {"head_specific", "head_shared"})
          for (const char* mode : {"multiplicative", "additive"}) {
            const bool dense = std::string(position) == "dense";
            if (dense &&
                (std::string(granularity) == "headwise" || std::string(sharing) == "head_shared"))
              continue;
            json j = base();
            j["gate"] = {{"position", position},
                         {"kind", kind},
                         {"granularity", granularity},
                         {"sharing", sharing},
                         {"mode", mode}};
            EXPECT_EQ(error_of(j), "") << j["gate"].dump();
            ++accepted;
          }
  EXPECT_EQ(accepted, 3 * (4 * 8 + 2));
  for (const char* kind : {"silu_only", "head_rmsnorm"}) {
    json j = base();
    j["gate"] = {{"position", "sdpa"}, {"kind", kind}};
    EXPECT_EQ(error_of(j), "");
  }
}

struct BadCase {
  const char* name;
  json patch;  // merged into the base config
  const char* message;
};

class ConfigRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigRejects, WithAClearMessage) {
  json j = base();
  j.merge_patch(GetParam().patch);
  const std::string message = error_of(j);
  EXPECT_NE(message.find(GetParam().message), std::string::npos) << "got: " << message;
  EXPECT_EQ(message.rfind("cfg.json", 0), 0u) << "the message names the file: " << message;
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, ConfigRejects,
    ::testing::Values(
        BadCase{"kv_heads_not_dividing",
                {{"num_key_value_heads", 3}},
                "'num_key_value_heads': expected a divisor of num_attention_heads (4), found 3"},
        BadCase{"zero_size",
                {{"hidden_size", 0}},
                "'hidden_size': expected a positive integer, found 0"},
        BadCase{"negative_size", {{"vocab_size", -5}}, "'vocab_size': expected a positive integer"},
        BadCase{"fractional_size",
                {{"intermediate_size", 2.5}},
                "'intermediate_size': expected a positive integer"},
        BadCase{"string_size",
                {{"num_hidden_layers", "2"}},
                "'num_hidden_layers': expected a positive integer"},
        BadCase{"missing_required", {{"vocab_size", nullptr}}, "field 'vocab_size' is required"},
        BadCase{"head_dim_not_derivable",
                {{"hidden_size", 30}},
                "hidden_size (30) is not divisible by num_attention_heads (4)"},
        BadCase{"odd_rotary",
                {{"head_dim", 6}, {"partial_rotary_factor", 0.5}},
                "must be an even integer"},
        BadCase{"rotary_above_one",
                {{"partial_rotary_factor", 1.5}},
                "'partial_rotary_factor': expected a number in [0, 1]"},
        BadCase{
            "non_positive_theta", {{"rope_theta", 0}}, "'rope_theta': expected a positive number"},
        BadCase{"unknown_field", {{"hiden_size", 32}}, "unknown field 'hiden_size'"},
        BadCase{"bad_bool", {{"use_qk_norm", 1}}, "'use_qk_norm': expected true or false"},
        BadCase{"unknown_gate_field",
                {{"gate", {{"position", "sdpa"}, {"gain", 1}}}},
                "gate: unknown field 'gain'"},
        BadCase{"unknown_position",
                {{"gate", {{"position", "G1"}}}},
                "'position': expected one of dense | key | none | query | sdpa | value"},
        BadCase{"headwise_dense",
                {{"gate", {{"position", "dense"}, {"granularity", "headwise"}}}},
                "granularity 'headwise' is not allowed at position 'dense'"},
        BadCase{"shared_dense",
                {{"gate", {{"position", "dense"}, {"sharing", "head_shared"}}}},
                "sharing 'head_shared' is not allowed at position 'dense'"},
        BadCase{"options_without_position",
                {{"gate", {{"granularity", "headwise"}}}},
                "'granularity' is not allowed with position 'none'"},
        BadCase{"after_qk_norm_at_sdpa",
                {{"gate", {{"position", "sdpa"}, {"after_qk_norm", false}}}},
                "'after_qk_norm' is not allowed at position 'sdpa'"},
        BadCase{"silu_only_not_at_sdpa",
                {{"gate", {{"position", "value"}, {"kind", "silu_only"}}}},
                "position must be 'sdpa'"},
        BadCase{
            "head_rmsnorm_with_activation",
            {{"gate", {{"position", "sdpa"}, {"kind", "head_rmsnorm"}, {"activation", "silu"}}}},
            "'activation' is not allowed with kind 'head_rmsnorm'"},
        BadCase{
            "ns_sigmoid_with_activation",
            {{"gate", {{"position", "sdpa"}, {"kind", "ns_sigmoid"}, {"activation", "sigmoid"}}}},
            "'activation' is not allowed with kind 'ns_sigmoid'"},
        BadCase{"gate_not_object", {{"gate", "sdpa"}}, "gate: expected a JSON object"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace gattn
