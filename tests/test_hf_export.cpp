// gattn export: a model written in a Hugging Face layout loads back bitwise (fp32), matches the
// folders transformers itself wrote tensor for tensor, and models without an equivalent in the
// format are refused with the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "io/hf_config.h"
#include "io/hf_export.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "model/layout.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kHfDir = std::string(GATTN_FIXTURE_DIR) + "/hf";

// GQA with G = 2, head_dim 12, as the fixtures.
Config tiny(const json& gate, bool tied = false) {
  json j = {{"vocab_size", 64},         {"hidden_size", 32},           {"num_hidden_layers", 2},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2},    {"head_dim", 12},
            {"intermediate_size", 40},  {"tie_word_embeddings", tied}, {"gate", gate}};
  return config_from_json(j, "test");
}

// Random matrices; norm weights in [0.5, 2), where w - 1 and then 1 + (w - 1) are exact.
std::unique_ptr<Weights> random_weights(const Config& c) {
  auto weights = std::make_unique<Weights>(c);
  const ParamLayout& layout = weights->layout();
  float* p = weights->data();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::uniform_real_distribution<float> norm_weight(0.5f, 2.0f);
  for (const TensorSpec& t : layout.tensors())
    for (int64_t i = 0; i < t.numel; ++i)
      p[t.offset + i] = t.shape.size() == 1 ? norm_weight(rng) : normal(rng);
  return weights;
}

class HfExport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_hfx_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(HfExport, RoundTripIsBitwiseInFp32) {
  const struct {
    const char* name;
    json gate;
    HfExportFormat format;
    bool tied;
  } cases[] = {
      {"qwen3", {{"position", "none"}}, HfExportFormat::qwen3, false},
      {"qwen3_tied", {{"position", "none"}}, HfExportFormat::qwen3, true},
      {"authors_elementwise", {{"position", "sdpa"}}, HfExportFormat::authors, false},
      {"authors_headwise",
       {{"position", "sdpa"}, {"granularity", "headwise"}},
       HfExportFormat::authors,
       true},
      {"qwen3_next", {{"position", "sdpa"}}, HfExportFormat::qwen3_next, false},
  };
  for (const auto& c : cases) {
    const Config config = tiny(c.gate, c.tied);
    const std::unique_ptr<Weights> weights = random_weights(config);
    export_hf(*weights, out(c.name), {.format = c.format, .dtype = Dtype::F32});
    const std::unique_ptr<Weights> back = load_any_model(out(c.name));
    EXPECT_EQ(config_to_json(back->config()), config_to_json(config)) << c.name;
    EXPECT_TRUE(back->values() == weights->values())
        << c.name << ": parameters differ after the round trip";
  }
}

// Loading looks every tensor up by name (in the layout and in the files' headers): a model of
// 72,003 tensors (6,000 layers; Qwen3-Next's 512 experts make 73,728) loads in seconds, not in
// the n^2 / 2 string comparisons of a scan per name.
TEST_F(HfExport, SeventyThousandTensorsLoadInSeconds) {
  json j = {{"vocab_size", 4},
            {"hidden_size", 2},
            {"num_hidden_layers", 6000},
            {"num_attention_heads", 1},
            {"num_key_value_heads", 1},
            {"head_dim", 2},
            {"intermediate_size", 2},
            {"max_position_embeddings", 8},
            {"gate", {{"position", "sdpa"}}}};
  const Config config = config_from_json(j, "test");
  const std::unique_ptr<Weights> weights = random_weights(config);
  ASSERT_EQ(weights->layout().tensors().size(), 72003u);
  export_hf(*weights, out("many"), {.format = HfExportFormat::authors, .dtype = Dtype::F32});
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<Weights> back = load_any_model(out("many"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(back->values() == weights->values());
#ifdef __SANITIZE_ADDRESS__
  const double limit = 40;  // ASan's instrumentation; a scan per name took 234 s in release
#else
  const double limit = 10;
#endif
  EXPECT_LT(seconds, limit);
  std::printf("loaded %zu tensors in %.2f s\n", weights->layout().tensors().size(), seconds);
}

TEST_F(HfExport, Bf16IsRoundedToNearestEven) {
  const Config config = tiny({{"position", "sdpa"}});
  const std::unique_ptr<Weights> weights = random_weights(config);
  export_hf(*weights, out("m"), {.format = HfExportFormat::authors});
  const std::unique_ptr<Weights> back = load_any_model(out("m"));
  ASSERT_EQ(back->size(), weights->size());
  for (int64_t i = 0; i < weights->size(); ++i)
    ASSERT_EQ(back->data()[i], round_to_bf16(weights->data()[i])) << "parameter " << i;
}

TEST_F(HfExport, ShardsWithAnIndexAboveTheSizeLimit) {
  const Config config = tiny({{"position", "sdpa"}});
  const std::unique_ptr<Weights> weights = random_weights(config);
  export_hf(*weights, out("m"),
            {.format = HfExportFormat::qwen3_next, .dtype = Dtype::F32, .max_shard_bytes = 20000});
  EXPECT_TRUE(fs::exists(out("m") + "/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(out("m") + "/model.safetensors"));
  EXPECT_GT(hf_shards(out("m")).files.size(), size_t(2));
  EXPECT_TRUE(load_any_model(out("m"))->values() == weights->values());
}

// gattn's export of a transformers-written folder gives transformers' own tensors back.
TEST_F(HfExport, MatchesTheFoldersTransformersWrote) {
  const struct {
    const char* fixture;
    HfExportFormat format;
    Dtype dtype;
    float tolerance;  // qwen3_next: w -> 1 + w -> w rounds w to a multiple of 2^-23 near 1
  } cases[] = {{"qwen3_f32", HfExportFormat::qwen3, Dtype::F32, 0},
               {"authors_elementwise_f32", HfExportFormat::authors, Dtype::F32, 0},
               {"authors_headwise_bf16", HfExportFormat::authors, Dtype::BF16, 0},
               {"qwen3_next_f32", HfExportFormat::qwen3_next, Dtype::F32, 6e-8f},
               {"qwen3_next_hybrid_f32", HfExportFormat::qwen3_next, Dtype::F32, 6e-8f},
               {"qwen3_next_moe_f32", HfExportFormat::qwen3_next, Dtype::F32, 6e-8f},
               {"qwen3_next_moe_hybrid_f32", HfExportFormat::qwen3_next, Dtype::F32, 6e-8f}};
  for (const auto& c : cases) {
    const std::unique_ptr<Weights> weights = load_any_model(kHfDir + "/" + c.fixture);
    export_hf(*weights, out(c.fixture), {.format = c.format, .dtype = c.dtype});
    const SafetensorsReader theirs(kHfDir + "/" + c.fixture + "/model.safetensors");
    const SafetensorsReader ours(out(c.fixture) + "/model.safetensors");
    EXPECT_EQ(ours.tensors().size(), theirs.tensors().size()) << c.fixture;
    for (const TensorView& t : theirs.tensors()) {
      ASSERT_NE(ours.find(t.name), nullptr) << c.fixture << ": " << t.name;
      EXPECT_EQ(ours.get(t.name).shape, t.shape) << t.name;
      EXPECT_EQ(ours.get(t.name).dtype, t.dtype) << t.name;
      const std::vector<float> a = ours.read_floats(t.name), b = theirs.read_floats(t.name);
      float worst = 0;
      for (size_t i = 0; i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
      EXPECT_LE(worst, c.tolerance) << c.fixture << ": " << t.name;
    }
  }
}

// A hybrid (Gated DeltaNet layers, r = 2 value heads per key head) in both hybrid formats:
// Qwen3.5's flat projections and Qwen3-Next's grouped ones load back bitwise.
TEST_F(HfExport, HybridRoundTripIsBitwiseInFp32) {
  for (const bool tied : {false, true})
    for (const HfExportFormat format : {HfExportFormat::qwen3_5, HfExportFormat::qwen3_next}) {
      json j = config_to_json(tiny({{"position", "sdpa"}}, tied));
      j.erase("mlp_types");
      j.update({{"num_hidden_layers", 4},
                {"layer_types",
                 {"linear_attention", "linear_attention", "linear_attention", "full_attention"}},
                {"linear_num_key_heads", 2},
                {"linear_num_value_heads", 4},
                {"linear_key_head_dim", 12},
                {"linear_value_head_dim", 10},
                {"partial_rotary_factor", 0.5}});
      const Config config = config_from_json(j, "test");
      const std::unique_ptr<Weights> weights = random_weights(config);
      const std::string name =
          std::string(format == HfExportFormat::qwen3_5 ? "q35" : "next") + (tied ? "_tied" : "");
      export_hf(*weights, out(name), {.format = format, .dtype = Dtype::F32});
      const std::unique_ptr<Weights> back = load_any_model(out(name));
      EXPECT_EQ(config_to_json(back->config()), config_to_json(config)) << name;
      EXPECT_TRUE(back->values() == weights->values()) << name << ": parameters differ";
      const SafetensorsReader file(out(name) + "/model.safetensors");
      const bool next = format == HfExportFormat::qwen3_next;
      EXPECT_EQ(file.find("model.layers.0.linear_attn.in_proj_qkvz.weight") != nullptr, next);
      EXPECT_EQ(file.find("model.layers.0.linear_attn.in_proj_qkv.weight") != nullptr, !next);
    }
}

// The qwen3_5 export of the Qwen3.5 hybrid transformers wrote holds its text model's tensors
// exactly (as Qwen3_5ForCausalLM names them: model.layers.*, not model.language_model.*).
TEST_F(HfExport, Qwen35ExportHoldsTheTextModelTransformersWrote) {
  const std::unique_ptr<Weights> weights = load_any_model(kHfDir + "/qwen3_5_hybrid_f32");
  export_hf(*weights, out("q35"), {.format = HfExportFormat::qwen3_5, .dtype = Dtype::F32});
  const SafetensorsReader theirs(kHfDir + "/qwen3_5_hybrid_f32/model.safetensors");
  const SafetensorsReader ours(out("q35") + "/model.safetensors");
  size_t compared = 0;
  for (const TensorView& t : theirs.tensors()) {
    const std::string prefix = "model.language_model.";
    if (t.name != "lm_head.weight" && !t.name.starts_with(prefix)) continue;  // vision, mtp
    const std::string name =
        t.name == "lm_head.weight" ? t.name : "model." + t.name.substr(prefix.size());
    ASSERT_NE(ours.find(name), nullptr) << name;
    EXPECT_EQ(ours.get(name).shape, t.shape) << name;
    const std::vector<float> a = ours.read_floats(name), b = theirs.read_floats(t.name);
    float worst = 0;
    for (size_t i = 0; i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LE(worst, 1.2e-7f) << name;  // norms: w -> 1 + w -> w rounds 1 + w (in [1, 4))
    ++compared;
  }
  EXPECT_EQ(compared, ours.tensors().size());
  const json config = json::parse(std::ifstream(out("q35") + "/config.json"));
  EXPECT_EQ(config["model_type"], "qwen3_5_text");
  EXPECT_EQ(config["rope_parameters"]["partial_rotary_factor"], 0.5);
}

// The Qwen3.5-MoE hybrid transformers wrote (its experts one by one), exported as qwen3_5: the
// experts fused as Qwen3.5-MoE checkpoints store them (gate_up_proj [E, 2 Ie, C], each expert's
// gate rows then its up rows; down_proj [E, C, Ie]) holding transformers' values, every other
// tensor as transformers wrote it; loaded back, the parameters are bitwise those exported.
TEST_F(HfExport, Qwen35MoeExportFusesTheExpertsTransformersWrote) {
  const std::string fixture = kHfDir + "/qwen3_5_moe_hybrid_f32";
  const std::unique_ptr<Weights> weights = load_any_model(fixture);
  export_hf(*weights, out("q35moe"), {.format = HfExportFormat::qwen3_5, .dtype = Dtype::F32});
  const SafetensorsReader theirs(fixture + "/model.safetensors");
  const SafetensorsReader ours(out("q35moe") + "/model.safetensors");
  const Config& c = weights->config();
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, C = c.hidden_size;
  size_t experts_seen = 0, others = 0;
  for (const TensorView& t : theirs.tensors()) {
    const size_t at = t.name.find(".mlp.experts.");
    const std::vector<float> b = theirs.read_floats(t.name);
    std::vector<float> a;
    if (at == std::string::npos) {
      ASSERT_NE(ours.find(t.name), nullptr) << t.name;
      a = ours.read_floats(t.name);
      ++others;
    } else {  // model.layers.L.mlp.experts.E.PART.weight
      const std::string prefix = t.name.substr(0, at + 13), rest = t.name.substr(at + 13);
      const int64_t e = std::stoi(rest);
      const std::string part = rest.substr(rest.find('.') + 1);
      const bool down = part == "down_proj.weight";
      const TensorView& fused = ours.get(prefix + (down ? "down_proj" : "gate_up_proj"));
      EXPECT_EQ(fused.shape,
                down ? std::vector<int64_t>({E, C, I}) : std::vector<int64_t>({E, 2 * I, C}));
      const std::vector<float> all = ours.read_floats(fused.name);
      const int64_t per = int64_t(b.size()),
                    offset = down ? e * per : e * 2 * per + (part == "up_proj.weight" ? per : 0);
      a.assign(all.begin() + offset, all.begin() + offset + per);
      ++experts_seen;
    }
    float worst = 0;
    for (size_t i = 0; i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LE(worst, 1.2e-7f) << t.name;  // norms: w -> 1 + w -> w
  }
  EXPECT_EQ(experts_seen, size_t(3 * 3 * E));  // 3 layers of E experts' 3 matrices
  EXPECT_EQ(ours.tensors().size(), others + 3 * 2);
  const json config = json::parse(std::ifstream(out("q35moe") + "/config.json"));
  EXPECT_EQ(config["model_type"], "qwen3_5_moe_text");
  EXPECT_EQ(config["architectures"][0], "Qwen3_5MoeForCausalLM");
  const std::unique_ptr<Weights> back = load_any_model(out("q35moe"));
  EXPECT_EQ(config_to_json(back->config()), config_to_json(c));
  // Random (non-norm) values round-trip exactly; the norms within w -> 1 + w -> w's rounding.
  double worst = 0;
  for (size_t i = 0; i < back->values().size(); ++i)
    worst = std::max(worst, double(std::abs(back->data()[i] - weights->data()[i])));
  EXPECT_LE(worst, 1.2e-7);
}

TEST_F(HfExport, CopiesTheTokenizer) {
  const Config config = tiny({{"position", "none"}});
  fs::create_directories(dir_);
  std::ofstream(out("tokenizer.json")) << "{\"model\": {}}";
  export_hf(*random_weights(config), out("m"), {.tokenizer_json = out("tokenizer.json")});
  EXPECT_EQ(read_hf_model_info(out("m")).tokenizer_json, out("m") + "/tokenizer.json");
}

TEST_F(HfExport, RefusesModelsWithoutAnEquivalent) {
  auto refusal = [](const json& gate, HfExportFormat format, const json& extra = json::object()) {
    json j = config_to_json(tiny(gate));
    j.update(extra);
    return hf_export_refusal(config_from_json(j, "test"), format);
  };
  const json none = {{"position", "none"}}, g1 = {{"position", "sdpa"}};
  EXPECT_EQ(refusal(none, HfExportFormat::qwen3), "");
  EXPECT_EQ(refusal(g1, HfExportFormat::authors), "");
  EXPECT_EQ(refusal(g1, HfExportFormat::qwen3_next), "");
  EXPECT_NE(refusal(g1, HfExportFormat::qwen3).find("Qwen3 has none"), std::string::npos);
  EXPECT_NE(refusal({{"position", "value"}}, HfExportFormat::authors).find("is not G1"),
            std::string::npos);
  EXPECT_NE(refusal({{"position", "sdpa"}, {"activation", "silu"}}, HfExportFormat::qwen3_next)
                .find("is not G1"),
            std::string::npos);
  EXPECT_NE(refusal({{"position", "sdpa"}, {"sharing", "head_shared"}}, HfExportFormat::authors)
                .find("is not G1"),
            std::string::npos);
  EXPECT_NE(refusal({{"position", "sdpa"}, {"kind", "input_independent"}}, HfExportFormat::authors)
                .find("is not G1"),
            std::string::npos);
  EXPECT_NE(refusal({{"position", "sdpa"}, {"granularity", "headwise"}}, HfExportFormat::qwen3_next)
                .find("headwise"),
            std::string::npos);
  EXPECT_NE(refusal(none, HfExportFormat::qwen3, {{"use_qk_norm", false}}).find("no QK-norm"),
            std::string::npos);
  EXPECT_NE(refusal(none, HfExportFormat::qwen3, {{"sandwich_norm", true}}).find("sandwich"),
            std::string::npos);
  EXPECT_NE(refusal(none, HfExportFormat::qwen3, {{"block_output_clip", 10.0}}).find("clips"),
            std::string::npos);
  EXPECT_NE(
      refusal(g1, HfExportFormat::qwen3_next, {{"partial_rotary_factor", 0.0}}).find("no RoPE"),
      std::string::npos);
  EXPECT_NE(
      refusal(g1, HfExportFormat::authors, {{"partial_rotary_factor", 0.5}}).find("partial rotary"),
      std::string::npos);

  json hybrid = {{"num_hidden_layers", 2}, {"layer_types", {"linear_attention", "full_attention"}}};
  EXPECT_EQ(refusal(g1, HfExportFormat::qwen3_5, hybrid), "");
  EXPECT_NE(
      refusal(g1, HfExportFormat::authors, hybrid).find("only --format qwen3_5 and qwen3_next"),
      std::string::npos);

  const json moe = {{"mlp_types", {"moe", "moe"}},
                    {"num_experts", 4},
                    {"num_experts_per_tok", 2},
                    {"moe_intermediate_size", 8}};
  EXPECT_EQ(refusal(g1, HfExportFormat::qwen3_5, moe), "");
  EXPECT_EQ(refusal(g1, HfExportFormat::qwen3_next, moe), "");
  EXPECT_NE(refusal(g1, HfExportFormat::authors, moe).find("only --format qwen3_next and qwen3_5"),
            std::string::npos);
  json mixed = moe;
  mixed["mlp_types"] = {"dense", "moe"};
  EXPECT_EQ(refusal(g1, HfExportFormat::qwen3_next, mixed), "");
  EXPECT_NE(refusal(g1, HfExportFormat::qwen3_5, mixed).find("layer 0 has a dense MLP"),
            std::string::npos);
  json unnormalised = moe;
  unnormalised["norm_topk_prob"] = false;
  EXPECT_NE(refusal(g1, HfExportFormat::qwen3_5, unnormalised).find("norm_topk_prob false"),
            std::string::npos);

  const Config gated = tiny({{"position", "value"}});
  try {
    export_hf(*random_weights(gated), out("m"), {.format = HfExportFormat::authors});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("export to authors: refused because its gate"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(out("m")));
}

}  // namespace
}  // namespace gattn
