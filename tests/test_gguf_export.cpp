// GGUF files gattn writes (io/gguf_writer.h, io/gguf_export.h, `gattn quantize`): every tensor's
// type and bytes equal to what llama.cpp's quantizer writes for the same values
// (quantizer_expected.json, tools/reference/make_quantizer_fixtures.py), the file read back by
// gattn's reader as the same model, and the tokenizer carried over id for id.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "infer/gguf_tokenizer.h"
#include "io/gguf.h"
#include "io/gguf_export.h"
#include "io/gguf_model.h"
#include "io/hf_weights.h"
#include "model/config.h"
#include "ops/matmul.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "util/checksum.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

const std::string kDir = std::string(GATTN_FIXTURE_DIR) + "/gguf/";

class GgufExport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gattn_gguf_export_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ifstream in(kDir + "quantizer_expected.json");
    expected_ = nlohmann::json::parse(in);
    source_ = kDir + expected_["source"].get<std::string>();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  nlohmann::json expected_;
  std::string source_;
};

TEST_F(GgufExport, QuantizedFilesHoldLlamaCppsBytesAndReadBackAsTheModel) {
  const auto model = load_gguf_model(source_, discard_log(), WeightDtype::f32);
  const TokenizerSpec tokenizer = gguf_tokenizer_spec(GgufReader(source_));
  for (const auto& [type, tensors] : expected_["types"].items()) {
    const std::string out = path(type + ".gguf");
    export_gguf(*model, &tokenizer, type, out, discard_log());
    const GgufReader file(out);
    EXPECT_EQ(file.get_string("general.architecture"), "qwen3");
    ASSERT_EQ(file.tensors().size(), tensors.size()) << type;
    for (const GgufTensor& t : file.tensors()) {
      ASSERT_TRUE(tensors.contains(t.name)) << type << " " << t.name;
      EXPECT_EQ(ggml_type_name(t.type), tensors[t.name]["type"].get<std::string>())
          << type << " " << t.name;
      EXPECT_EQ(checksum_hex(checksum64(t.data, size_t(t.bytes))),
                tensors[t.name]["xxh3"].get<std::string>())
          << type << " " << t.name;
    }
    const Config& c = model->config();
    const Config back = gguf_config(file);
    EXPECT_EQ(config_to_json(back), config_to_json(c)) << type;
  }
}

TEST_F(GgufExport, Bf16AndF32FilesReadBackToTheSameValues) {
  const auto model = load_gguf_model(source_, discard_log(), WeightDtype::f32);
  const TokenizerSpec tokenizer = gguf_tokenizer_spec(GgufReader(source_));
  for (const std::string type : {"f32", "bf16"}) {
    export_gguf(*model, &tokenizer, type, path(type + ".gguf"), discard_log());
    const auto back = load_gguf_model(path(type + ".gguf"), discard_log(), WeightDtype::f32);
    int64_t differ = 0;  // from the values as the type stores them: f32 exact, bf16 rounded
    for (const TensorSpec& spec : model->layout().tensors())
      for (int64_t i = 0; i < spec.numel; ++i) {
        const float v = model->at(spec.offset)[i];
        const float want = type == "bf16" && !spec.elementwise ? round_to_bf16(v) : v;
        differ += back->at(spec.offset)[i] != want;
      }
    EXPECT_EQ(differ, 0) << type;
  }
}

TEST_F(GgufExport, TheTokenizerComesBackIdForId) {
  const TokenizerSpec spec =
      read_tokenizer_json(std::string(GATTN_FIXTURE_DIR) + "/tokenizer/gattn_trained.json");
  const auto model = load_gguf_model(source_, discard_log(), WeightDtype::f32);
  // The tokenizer has 8,192 tokens; a model with fewer rows cannot carry it.
  EXPECT_THROW(export_gguf(*model, &spec, "q8_0", path("small.gguf"), discard_log()), Error);
  GgufWriter writer;
  add_gguf_tokenizer(spec, 8200, writer, discard_log());
  writer.add_string("general.architecture", "qwen3");
  writer.write(path("tokenizer.gguf"));
  const GgufReader file(path("tokenizer.gguf"));
  EXPECT_EQ(file.get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(file.get_strings("tokenizer.ggml.tokens").size(), 8200u);
  EXPECT_EQ(file.get_strings("tokenizer.ggml.tokens")[8199], "[PAD8199]");
  const Tokenizer original = Tokenizer::from_spec(spec);
  const Tokenizer carried = gguf_tokenizer(path("tokenizer.gguf"));
  const std::string text =
      "The quick brown fox's 12 jumps, über alles!\n\n  Indented\tline <|endoftext|> end.";
  EXPECT_EQ(carried.encode(text), original.encode(text));
}

TEST_F(GgufExport, ModelsNeitherArchitectureExpressesAreRefusedWithTheReason) {
  const Config headwise =
      config_from_json({{"vocab_size", 256},
                        {"hidden_size", 256},
                        {"num_hidden_layers", 1},
                        {"num_attention_heads", 4},
                        {"head_dim", 64},
                        {"intermediate_size", 256},
                        {"gate", {{"position", "sdpa"}, {"granularity", "headwise"}}}},
                       "test");
  Weights weights(headwise);
  weights.init(1);
  const TokenizerSpec tokenizer = gguf_tokenizer_spec(GgufReader(source_));
  try {
    export_gguf(weights, &tokenizer, "q8_0", path("gated.gguf"), discard_log());
    FAIL() << "a headwise gate was written as qwen35";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qwen35 GGUF file: refused because its gate is headwise"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path("gated.gguf")));
}

// A Qwen3.5 model (tests/fixtures/hf/qwen3_5_*, Hugging Face's grouped V heads) written as a qwen35
// file holds the tensors llama.cpp's own converter wrote for the same folder
// (tests/fixtures/gguf/qwen35_*.gguf): the same names, types, shapes and bytes (ssm_a, which both
// compute as -exp(A_log) in float32, within an ulp); it reads back as the same model.
TEST_F(GgufExport, Qwen35FilesHoldTheTensorsLlamaCppsConverterWrites) {
  for (const auto& [folder, fixture, type] :
       {std::tuple{"qwen3_5_hybrid_f32", "qwen35_hybrid_f32", "f32"},
        std::tuple{"qwen3_5_hybrid_tied_bf16_sharded", "qwen35_hybrid_tied_bf16", "bf16"},
        std::tuple{"qwen3_5_f32", "qwen35_dense_f32", "f32"}}) {
    const auto model = load_any_model(std::string(GATTN_FIXTURE_DIR) + "/hf/" + folder);
    const std::string out = path(std::string(fixture) + ".gguf");
    export_gguf(*model, nullptr, type, out, discard_log());
    const GgufReader ours(out), theirs(kDir + fixture + ".gguf");
    EXPECT_EQ(ours.get_string("general.architecture"), "qwen35");
    ASSERT_EQ(ours.tensors().size(), theirs.tensors().size()) << fixture;
    for (const GgufTensor& t : theirs.tensors()) {
      const GgufTensor* o = ours.find(t.name);
      ASSERT_TRUE(o) << fixture << " " << t.name;
      EXPECT_EQ(o->type, t.type) << t.name;
      EXPECT_EQ(o->shape, t.shape) << t.name;
      ASSERT_EQ(o->bytes, t.bytes) << t.name;
      if (t.name.ends_with("ssm_a")) {
        for (int64_t i = 0; i < t.numel; ++i) {
          const float a = reinterpret_cast<const float*>(o->data)[i];
          const float b = reinterpret_cast<const float*>(t.data)[i];
          EXPECT_LE(std::fabs(a - b), std::fabs(b) * 1.2e-7f) << t.name << " " << i;
        }
        continue;
      }
      EXPECT_EQ(std::memcmp(o->data, t.data, size_t(t.bytes)), 0) << fixture << " " << t.name;
    }
    EXPECT_EQ(config_to_json(gguf_config(ours)), config_to_json(gguf_config(theirs))) << fixture;
  }
}

}  // namespace
}  // namespace gattn
