// Model checkpoints: round trip, and a clear error for a checkpoint that does not match its config
// or holds bad values; writes are atomic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/weights.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

Config small() {
  Config c;
  c.vocab_size = 50;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 8;
  c.intermediate_size = 24;
  c.gate.position = GatePosition::sdpa;
  return c;
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    weights_.init(5);
    save_model(dir_.string(), weights_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rewrites model.safetensors with one tensor changed by `edit` (or dropped if it returns false).
  template <typename Edit>
  void rewrite(Edit edit) {
    const std::string file = (dir_ / "model.safetensors").string();
    std::vector<std::vector<float>> copies;
    std::vector<TensorToWrite> tensors;
    {
      const SafetensorsReader r(file);
      for (const TensorView& t : r.tensors()) {
        std::vector<float> values = r.read_floats(t.name);
        TensorToWrite w{t.name, Dtype::F32, t.shape, nullptr};
        if (!edit(w, values)) continue;
        copies.push_back(std::move(values));
        tensors.push_back(w);
      }
    }
    for (size_t i = 0; i < tensors.size(); ++i) tensors[i].data = copies[i].data();
    write_safetensors(file, tensors);
  }

  std::string load_error() {
    try {
      load_model(dir_.string());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
  Weights weights_{small()};
};

TEST_F(Checkpoint, RoundTripsExactly) {
  const std::unique_ptr<Weights> loaded = load_model(dir_.string());
  EXPECT_EQ(loaded->values(), weights_.values());
  EXPECT_EQ(loaded->config().gate.position, GatePosition::sdpa);
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "no temp file left";
}

TEST_F(Checkpoint, AcceptsBf16Weights) {
  const std::string file = (dir_ / "model.safetensors").string();
  std::vector<std::vector<uint16_t>> halves;
  std::vector<TensorToWrite> tensors;
  {
    const SafetensorsReader r(file);
    for (const TensorView& t : r.tensors()) {
      std::vector<uint16_t> h;
      for (float x : r.read_floats(t.name)) {
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        h.push_back(uint16_t(bits >> 16));  // truncation is enough here
      }
      halves.push_back(std::move(h));
      tensors.push_back({t.name, Dtype::BF16, t.shape, nullptr});
    }
  }
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].data = halves[i].data();
  write_safetensors(file, tensors);
  const std::unique_ptr<Weights> loaded = load_model(dir_.string());
  const AlignedFloats& params = loaded->values();
  for (size_t i = 0; i < params.size(); ++i)
    ASSERT_NEAR(params[i], weights_.values()[i], std::abs(weights_.values()[i]) / 64 + 1e-30);
}

TEST_F(Checkpoint, RejectsAMissingTensor) {
  rewrite([](TensorToWrite& t, std::vector<float>&) {
    return t.name != "model.layers.1.mlp.up_proj.weight";
  });
  EXPECT_NE(load_error().find("tensor 'model.layers.1.mlp.up_proj.weight' is missing"),
            std::string::npos)
      << load_error();
}

TEST_F(Checkpoint, RejectsAWrongShape) {
  rewrite([](TensorToWrite& t, std::vector<float>& v) {
    if (t.name == "model.norm.weight") t.shape = {4, 4};
    (void)v;
    return true;
  });
  EXPECT_NE(load_error().find("tensor 'model.norm.weight' has shape [4, 4], expected [16]"),
            std::string::npos)
      << load_error();
}

TEST_F(Checkpoint, RejectsNonFiniteValues) {
  rewrite([](TensorToWrite& t, std::vector<float>& v) {
    if (t.name == "model.layers.0.self_attn.sdpa_gate.weight") v[17] = std::nanf("");
    return true;
  });
  EXPECT_NE(load_error().find("tensor 'model.layers.0.self_attn.sdpa_gate.weight' has a non-finite "
                              "value (nan) at index 17"),
            std::string::npos)
      << load_error();
}

TEST_F(Checkpoint, RejectsACheckpointOfAnotherVariant) {
  Config baseline = small();
  baseline.gate = GateConfig{};
  save_config((dir_ / "config.json").string(), baseline);
  EXPECT_NE(
      load_error().find(
          "unexpected tensor 'model.layers.0.self_attn.sdpa_gate.weight' (does the config match"),
      std::string::npos)
      << load_error();
}

TEST_F(Checkpoint, RejectsABadConfigFile) {
  std::ofstream(dir_ / "config.json") << "{\"vocab_size\": 50,";
  EXPECT_NE(load_error().find("config.json: not valid JSON"), std::string::npos) << load_error();
}

}  // namespace
}  // namespace gattn
