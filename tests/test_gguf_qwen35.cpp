// llama.cpp's qwen35 GGUF files (tests/fixtures/gguf/qwen35_*.gguf: tiny Qwen3.5 models saved by
// transformers, tests/fixtures/hf/qwen3_5_*, converted by llama.cpp's own convert_hf_to_gguf.py;
// tools/reference/make_qwen35_gguf_fixtures.py) against transformers' logits of the folder they
// were converted from: the forward pass, the prefill and chunked decoding, the matrices read in
// place; a fine-tuning step against the folder's; and the Hugging Face export of a model kept in
// llama.cpp's tiled V-head order, read back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hf_reference.h"
#include "io/gguf.h"
#include "io/gguf_model.h"
#include "io/hf_config.h"
#include "io/hf_export.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "model_test_data.h"
#include "ops/weight_view.h"

namespace gattn {
namespace {

const std::string kFixtures = std::string(GATTN_FIXTURE_DIR);

struct Qwen35File {
  const char* gguf;    // in tests/fixtures/gguf
  const char* folder;  // in tests/fixtures/hf: what it was converted from
};

const Qwen35File kFiles[] = {{"qwen35_hybrid_f32", "qwen3_5_hybrid_f32"},
                             {"qwen35_hybrid_tied_bf16", "qwen3_5_hybrid_tied_bf16_sharded"},
                             {"qwen35_dense_f32", "qwen3_5_f32"}};

std::string gguf_path(const Qwen35File& f) { return kFixtures + "/gguf/" + f.gguf + ".gguf"; }
std::string folder_path(const Qwen35File& f) { return kFixtures + "/hf/" + f.folder; }

using Reference = HfReference;

std::vector<float> forward_logits(const Weights& weights, const std::vector<int32_t>& ids) {
  TrainState state(weights);
  std::vector<float> logits(ids.size() * size_t(weights.config().vocab_size));
  state.forward(Batch{ids.data(), nullptr, 1, int(ids.size())}, logits.data());
  return logits;
}

double error(const std::vector<float>& ours, const std::vector<float>& ref) {
  return relative_l2(ours.data(), ref.data(), int64_t(ref.size()));
}

class GgufQwen35 : public ::testing::TestWithParam<Qwen35File> {};

// The config is the folder's, the V heads marked tiled where key and value heads differ.
TEST_P(GgufQwen35, ReadsTheConfigOfTheFolderItWasConvertedFrom) {
  const Config ours = gguf_config(GgufReader(gguf_path(GetParam())));
  Config theirs = read_hf_model_info(folder_path(GetParam())).config;
  EXPECT_EQ(
      ours.linear_value_heads_tiled,
      theirs.has_linear_layers() && theirs.linear_num_value_heads != theirs.linear_num_key_heads);
  theirs.linear_value_heads_tiled = ours.linear_value_heads_tiled;
  EXPECT_EQ(config_to_json(ours), config_to_json(theirs));
}

TEST_P(GgufQwen35, LogitsMatchTransformers) {
  const Reference ref(folder_path(GetParam()));
  for (WeightDtype storage : {WeightDtype::f32, WeightDtype::bf16}) {
    const auto weights = load_any_model(gguf_path(GetParam()), discard_log(), storage);
    const std::vector<float> full = forward_logits(*weights, ref.ids);
    const int n = int(ref.ids.size());
    std::vector<float> prefill(full.size());
    InferState(*weights, n, n).forward(ref.ids.data(), n, prefill.data());
    const double decode = chunked_decode_error(*weights, ref.ids, {5, 1, 1, 2, n - 9}, full, n, n);
    std::printf(
        "  %-24s storage %s: logits rel. L2 vs transformers %.2e (prefill %.2e; decoded "
        "in chunks vs one pass %.2e)\n",
        GetParam().gguf, weight_dtype_name(storage), error(full, ref.logits),
        error(prefill, ref.logits), decode);
    EXPECT_LT(error(full, ref.logits), 1e-5);
    EXPECT_LT(error(prefill, ref.logits), 1e-5);
    EXPECT_LT(decode, 1e-5);
  }
}

// A fine-tuning step: the loss and each tensor's gradient norm (the V heads' order aside, the
// same gradient) as the folder's.
TEST_P(GgufQwen35, FinetuneStepMatchesTheFolders) {
  const Reference ref(folder_path(GetParam()));
  std::vector<int32_t> targets(ref.ids.begin() + 1, ref.ids.end());
  targets.push_back(-1);
  const Batch batch{ref.ids.data(), targets.data(), 1, int(ref.ids.size())};
  const float scale = 1.0f / float(ref.ids.size() - 1);
  const auto ours = load_any_model(gguf_path(GetParam()));
  const auto theirs = load_any_model(folder_path(GetParam()));
  TrainState a(*ours), b(*theirs);
  const double loss_a = a.forward_backward(batch, scale).nats,
               loss_b = b.forward_backward(batch, scale).nats;
  EXPECT_NEAR(loss_a, loss_b, 1e-6 * loss_b);
  for (const TensorSpec& t : ours->layout().tensors()) {
    double norm_a = 0, norm_b = 0;
    for (int64_t i = 0; i < t.numel; ++i) {
      norm_a += double(a.grads().data()[t.offset + i]) * a.grads().data()[t.offset + i];
      norm_b += double(b.grads().data()[t.offset + i]) * b.grads().data()[t.offset + i];
    }
    EXPECT_NEAR(std::sqrt(norm_a), std::sqrt(norm_b), 1e-5 * std::sqrt(norm_b) + 1e-12) << t.name;
  }
}

// Written as a Hugging Face checkpoint (the V heads back in the grouped order Qwen3.5 and
// Qwen3-Next store), read back: the same logits.
TEST_P(GgufQwen35, ExportsToHuggingFaceInTheGroupedOrder) {
  const Reference ref(folder_path(GetParam()));
  const auto weights = load_any_model(gguf_path(GetParam()));
  const std::vector<float> ours = forward_logits(*weights, ref.ids);
  for (HfExportFormat format : {HfExportFormat::qwen3_5, HfExportFormat::qwen3_next}) {
    const std::filesystem::path out = std::filesystem::temp_directory_path() /
                                      ("gattn_test_" + std::to_string(::getpid()) + "_" +
                                       GetParam().gguf + "_" + std::to_string(int(format)));
    std::filesystem::remove_all(out);
    export_hf(*weights, out.string(), {.format = format, .dtype = Dtype::F32});
    const auto back = load_any_model(out.string());
    std::filesystem::remove_all(out);
    EXPECT_FALSE(back->config().linear_value_heads_tiled);
    EXPECT_LT(error(forward_logits(*back, ref.ids), ours), 1e-6) << int(format);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GgufQwen35, ::testing::ValuesIn(kFiles),
                         [](const auto& test) { return std::string(test.param.gguf); });

TEST(GgufQwen35Names, DeltaNetTensorsMapToHuggingFacesNames) {
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.2.ssm_a", "qwen35"), "model.layers.2.linear_attn.A_log");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.0.attn_qkv.weight", "qwen35"),
            "model.layers.0.linear_attn.in_proj_qkv.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.post_attention_norm.weight", "qwen35"),
            "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.ffn_norm.weight", "qwen35"), "");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.0.ssm_a", "qwen3"), "");
  EXPECT_EQ(gguf_name_of_hf_tensor("model.layers.3.linear_attn.dt_bias", "qwen35"),
            "blk.3.ssm_dt.bias");
}

}  // namespace
}  // namespace gattn
