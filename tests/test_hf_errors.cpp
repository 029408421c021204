// The Hugging Face loader refuses every checkpoint it cannot read exactly with one error naming
// the file and the field or tensor: each case is a copy of a golden fixture with one thing broken.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "io/hf_config.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(contains(text, part))

struct OwnedTensor {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

class HfErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_hf_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A writable copy of tests/fixtures/hf/<name>.
  std::string copy(const std::string& name) {
    const fs::path to = dir_ / name;
    fs::copy(std::string(GATTN_FIXTURE_DIR) + "/hf/" + name, to, fs::copy_options::recursive);
    return to.string();
  }
  static void edit_json(const std::string& path, const std::function<void(json&)>& edit) {
    json j = json::parse(read_text_file(path));
    edit(j);
    write_text_file_atomically(path, j.dump(2));
  }
  static void edit_config(const std::string& folder, const std::function<void(json&)>& edit) {
    edit_json(folder + "/config.json", edit);
  }
  static void edit_tensors(const std::string& path,
                           const std::function<void(std::vector<OwnedTensor>&)>& edit) {
    std::vector<OwnedTensor> tensors;
    {
      const SafetensorsReader file(path);
      for (const TensorView& t : file.tensors()) {
        const size_t bytes = size_t(t.numel) * dtype_bytes(t.dtype);
        tensors.push_back({t.name, t.dtype, t.shape, {t.data, t.data + bytes}});
      }
    }
    edit(tensors);
    std::vector<TensorToWrite> out;
    for (const OwnedTensor& t : tensors) out.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
    write_safetensors(path, out);
  }
  static std::string error_of(const std::string& folder) {
    try {
      load_any_model(folder);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  static std::string config_error(const json& j) {
    try {
      hf_model_info_from_json(j, "config.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

TEST_F(HfErrors, MissingShard) {
  const std::string m = copy("qwen3_bf16_sharded");
  fs::remove(m + "/model-00003-of-00006.safetensors");
  EXPECT_CONTAINS(error_of(m), ("model.safetensors.index.json: shard "
                                "'model-00003-of-00006.safetensors' (holding tensor '"));
}

TEST_F(HfErrors, IndexNamesATensorItsShardLacks) {
  const std::string m = copy("qwen3_bf16_sharded");
  edit_json(m + "/model.safetensors.index.json", [](json& j) {
    auto& map = j["weight_map"];
    const std::string file = map["model.norm.weight"];
    map["model.norm.weight"] = file == "model-00001-of-00006.safetensors"
                                   ? "model-00002-of-00006.safetensors"
                                   : "model-00001-of-00006.safetensors";
  });
  EXPECT_CONTAINS(error_of(m), ("names tensor 'model.norm.weight' in shard"));
  EXPECT_CONTAINS(error_of(m), ("which does not have it"));
}

TEST_F(HfErrors, TensorInNoIndexIsMissing) {
  const std::string m = copy("qwen3_bf16_sharded");
  edit_json(m + "/model.safetensors.index.json",
            [](json& j) { j["weight_map"].erase("model.layers.1.mlp.down_proj.weight"); });
  EXPECT_CONTAINS(error_of(m), ("model.safetensors.index.json: tensor "
                                "'model.layers.1.mlp.down_proj.weight' is missing"));
}

TEST_F(HfErrors, WeightMapFilesMustStayInTheFolder) {
  for (const std::string bad :
       {"../model-00001-of-00006.safetensors", "/etc/passwd", "sub/x", ".."}) {
    const std::string m = copy("qwen3_bf16_sharded");
    edit_json(m + "/model.safetensors.index.json",
              [&](json& j) { j["weight_map"]["model.norm.weight"] = bad; });
    EXPECT_CONTAINS(error_of(m), ("weight_map['model.norm.weight'] names file '" + bad +
                                  "', which is not a file name inside the model folder"));
    fs::remove_all(m);
  }
}

// The index of a checkpoint of per-expert tensors (tens of thousands) reads whole and in order.
TEST(HfIndex, AWeightMapOfSeventyThousandTensorsReadsWhole) {
  constexpr int kTensors = 70000;
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  for (int i = 0; i < kTensors; ++i)
    index["weight_map"]["model.layers." + std::to_string(i / 1536) + ".mlp.experts." +
                        std::to_string(i % 512) + ".proj" + std::to_string(i % 3) + ".weight"] =
        "model-" + std::to_string(i % 97) + ".safetensors";
  const auto map = hf_weight_map(parse_json_text(index.dump(), "index.json"), "index.json");
  ASSERT_EQ(map.size(), size_t(kTensors));
  for (const auto& [tensor, file] : map) ASSERT_EQ(index["weight_map"][tensor], file) << tensor;
}

TEST_F(HfErrors, ShapeMismatch) {
  const std::string m = copy("qwen3_f32");
  edit_config(m, [](json& j) { j["intermediate_size"] = 48; });
  EXPECT_CONTAINS(error_of(m), ("model.safetensors: tensor 'model.layers.0.mlp.down_proj."
                                "weight' has shape [32, 40], expected [32, 48]"));
}

TEST_F(HfErrors, DtypeMismatch) {
  const std::string m = copy("qwen3_f32");
  edit_tensors(m + "/model.safetensors", [](std::vector<OwnedTensor>& ts) {
    for (OwnedTensor& t : ts)
      if (t.name == "model.norm.weight") t.dtype = Dtype::I32;
  });
  EXPECT_CONTAINS(error_of(m), ("tensor 'model.norm.weight' has dtype I32, expected F32, "
                                "BF16 or F16"));
}

TEST_F(HfErrors, GateFlagWithAQProjOfTheWrongRowCount) {
  const std::string plain = copy("qwen3_f32");
  edit_config(plain, [](json& j) { j["elementwise_attn_output_gate"] = true; });
  EXPECT_CONTAINS(error_of(plain), ("tensor 'model.layers.0.self_attn.q_proj.weight' has "
                                    "shape [48, 32], expected [96, 32] (2 blocks of 24 "
                                    "query rows then 24 gate rows"));
  const std::string elementwise = copy("authors_elementwise_f32");
  edit_config(elementwise, [](json& j) {
    j["elementwise_attn_output_gate"] = false;
    j["headwise_attn_output_gate"] = true;
  });
  EXPECT_CONTAINS(error_of(elementwise), ("has shape [96, 32], expected [52, 32]"));
}

TEST_F(HfErrors, BiasesAreRefused) {
  const std::string m = copy("qwen3_f32");
  edit_tensors(m + "/model.safetensors", [](std::vector<OwnedTensor>& ts) {
    ts.push_back(
        {"model.layers.0.self_attn.q_proj.bias", Dtype::F32, {48}, std::vector<uint8_t>(48 * 4)});
  });
  EXPECT_CONTAINS(error_of(m), ("tensor 'model.layers.0.self_attn.q_proj.bias' is a bias: "
                                "gattn has no projection biases"));
  edit_config(m, [](json& j) { j["attention_bias"] = true; });
  EXPECT_CONTAINS(error_of(m), ("config.json: field 'attention_bias' is true"));
}

TEST_F(HfErrors, UnexpectedTensor) {
  const std::string m = copy("qwen3_f32");
  edit_tensors(m + "/model.safetensors", [](std::vector<OwnedTensor>& ts) {
    ts.push_back(
        {"model.layers.0.self_attn.extra.weight", Dtype::F32, {2}, std::vector<uint8_t>(8)});
  });
  EXPECT_CONTAINS(error_of(m), ("unexpected tensor 'model.layers.0.self_attn.extra.weight'"));
}

// A Gated DeltaNet layer's missing or misshapen tensors, and a bad geometry, are named.
TEST_F(HfErrors, DeltaNetTensorsAndFields) {
  const std::string n = copy("qwen3_next_hybrid_f32");
  edit_tensors(n + "/model.safetensors", [](std::vector<OwnedTensor>& ts) {
    std::erase_if(ts, [](const OwnedTensor& t) {
      return t.name.ends_with("0.linear_attn.in_proj_ba.weight");
    });
  });
  EXPECT_CONTAINS(error_of(n),
                  ("tensor 'model.layers.0.linear_attn.in_proj_ba.weight' is missing"));
  const std::string m = copy("qwen3_5_hybrid_f32");
  edit_tensors(m + "/model.safetensors", [](std::vector<OwnedTensor>& ts) {
    for (OwnedTensor& t : ts)
      if (t.name.ends_with("layers.1.linear_attn.conv1d.weight"))
        t.shape[2] = 2, t.bytes.resize(t.bytes.size() / 2);
  });
  EXPECT_CONTAINS(error_of(m),
                  ("tensor 'model.language_model.layers.1.linear_attn.conv1d.weight' has shape"));
  const std::string v = copy("qwen3_5_hybrid_tied_bf16_sharded");
  edit_config(v, [](json& j) { j["text_config"]["linear_num_value_heads"] = 3; });
  EXPECT_CONTAINS(
      error_of(v),
      ("field 'linear_num_value_heads': expected a multiple of linear_num_key_heads (2), found 3"));
  edit_config(v, [](json& j) {
    j["text_config"]["linear_num_value_heads"] = 4;
    j["text_config"]["linear_conv_kernel_dim"] = 17;  // bounded: the conv state is kept per slot
  });
  EXPECT_CONTAINS(error_of(v),
                  ("field 'linear_conv_kernel_dim': expected an integer in [1, 16], found 17"));
  edit_config(v, [](json& j) {
    j["text_config"]["linear_conv_kernel_dim"] = 4;
    j["text_config"]["output_gate_type"] = "sigmoid";
  });
  EXPECT_CONTAINS(error_of(v), ("field 'output_gate_type' is 'sigmoid'"));
}

TEST_F(HfErrors, UnsupportedLayerTypes) {
  const std::string m = copy("qwen3_next_f32");
  // A linear_attention layer is read, so a checkpoint of full-attention layers does not fit it.
  edit_config(m, [](json& j) { j["layer_types"] = {"full_attention", "linear_attention"}; });
  EXPECT_CONTAINS(error_of(m), ("unexpected tensor 'model.layers.1.self_attn."));
  edit_config(m, [](json& j) { j.erase("layer_types"); });  // HF's default: 3 linear, 1 full
  EXPECT_CONTAINS(error_of(m), ("unexpected tensor 'model.layers.0.self_attn."));
  edit_config(m, [](json& j) { j["layer_types"] = {"full_attention", "sliding_attention"}; });
  EXPECT_CONTAINS(error_of(m), ("config.json: layer 1 has type 'sliding_attention' (field "
                                "'layer_types'): gattn runs full_attention and linear_attention "
                                "layers"));
  edit_config(m, [](json& j) { j["layer_types"] = {"full_attention", "full_attention"}; });
  // num_experts 4: layer 1 a mixture of experts, of Qwen3NextConfig's default 10 experts per
  // token; then of 2, which the checkpoint's dense tensors do not fit
  edit_config(m, [](json& j) { j["mlp_only_layers"] = {0}; });
  EXPECT_CONTAINS(error_of(m), ("config.json: field 'num_experts_per_tok': expected at most "
                                "num_experts (4), found 10"));
  edit_config(m, [](json& j) { j["num_experts"] = 65537; });
  EXPECT_CONTAINS(error_of(m),
                  ("config.json: field 'num_experts': expected an integer in [0, 65536], found "
                   "65537"));
  edit_config(m, [](json& j) { j["num_experts"] = 4, j["num_experts_per_tok"] = 2; });
  EXPECT_CONTAINS(error_of(m), ("tensor 'model.layers.1.mlp."));
  const std::string q = copy("qwen3_f32");
  edit_config(q, [](json& j) { j["layer_types"] = {"full_attention", "sliding_attention"}; });
  EXPECT_CONTAINS(error_of(q), ("layer 1 has type 'sliding_attention'"));
  edit_config(q, [](json& j) { j["layer_types"] = {"full_attention", "linear_attention"}; });
  EXPECT_CONTAINS(error_of(q), ("layer 1 has type 'linear_attention' (field 'layer_types'): gattn "
                                "runs only full_attention layers"));  // Qwen3 has none
}

TEST_F(HfErrors, UnsupportedModelType) {
  const std::string m = copy("qwen3_f32");
  edit_config(m, [](json& j) { j["model_type"] = "llama"; });
  EXPECT_CONTAINS(error_of(m), ("config.json: model_type 'llama' is not supported; "
                                "supported: qwen3 (plain or the authors' gated), qwen3_next"));
}

// Config fields gattn cannot honour, each named.
TEST_F(HfErrors, ConfigFieldsThatWouldChangeTheMath) {
  const json base =
      json::parse(read_text_file(std::string(GATTN_FIXTURE_DIR) + "/hf/qwen3_f32/config.json"));
  auto with = [&](const char* key, const json& value) {
    json j = base;
    j[key] = value;
    return config_error(j);
  };
  EXPECT_EQ(config_error(base), "no error");
  EXPECT_CONTAINS(with("hidden_act", "gelu"), ("field 'hidden_act' is 'gelu'"));
  EXPECT_CONTAINS(with("use_sliding_window", true), ("field 'use_sliding_window' is true"));
  EXPECT_CONTAINS(with("mlp_bias", true), ("field 'mlp_bias' is true"));
  EXPECT_CONTAINS(with("rope_parameters", {{"rope_type", "dynamic"}, {"factor", 2.0}}),
                  ("rope_type 'dynamic' is not supported"));
  json hub = base;
  hub.erase("rope_parameters");
  hub["rope_scaling"] = {{"rope_type", "ntk"}, {"factor", 2.0}};
  EXPECT_CONTAINS(config_error(hub), ("rope_type 'ntk' is not supported"));
  json both = base;
  both["headwise_attn_output_gate"] = both["elementwise_attn_output_gate"] = true;
  EXPECT_CONTAINS(config_error(both), ("are both true"));
  EXPECT_CONTAINS(config_error({{"model_type", "qwen3_5"}}), ("needs a 'text_config'"));
  EXPECT_CONTAINS(config_error({{"vocab_size", 8}}), ("field 'model_type' (a string)"));
}

// D14: rope_parameters beside a top-level rope field silently preferred one of them; a layer count
// of 2^31 was narrowed to -2147483648 before its range check.
TEST_F(HfErrors, AmbiguousRopeFieldsAndHugeLayerCounts) {
  const json base =
      json::parse(read_text_file(std::string(GATTN_FIXTURE_DIR) + "/hf/qwen3_f32/config.json"));
  for (const char* key : {"rope_theta", "partial_rotary_factor", "rope_scaling"}) {
    json j = base;
    j[key] = key == std::string("rope_scaling") ? json{{"rope_type", "linear"}, {"factor", 2.0}}
                                                : json(0.5);
    EXPECT_CONTAINS(config_error(j),
                    (std::string("fields 'rope_parameters' and '") + key + "' are both given"));
  }
  for (const json& layers : {json(int64_t(1) << 31), json(-1), json(0), json(2.5)}) {
    json j = base;
    j["num_hidden_layers"] = layers;
    EXPECT_CONTAINS(config_error(j),
                    ("field 'num_hidden_layers': expected an integer in [1, 2^30], "
                     "found " +
                     layers.dump()));
  }
}

TEST_F(HfErrors, HubStyleRopeFieldsAndDefaults) {
  json j =
      json::parse(read_text_file(std::string(GATTN_FIXTURE_DIR) + "/hf/qwen3_f32/config.json"));
  j.erase("rope_parameters");  // the hub's transformers-4 style
  j["rope_theta"] = 1e6;
  j["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}};
  Config c = hf_model_info_from_json(j, "config.json").config;
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::yarn);
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.partial_rotary_factor, 1.0);
  j["rope_scaling"] = nullptr;
  EXPECT_EQ(hf_model_info_from_json(j, "config.json").config.rope_scaling.type,
            RopeScaling::Type::none);

  json next = json::parse(
      read_text_file(std::string(GATTN_FIXTURE_DIR) + "/hf/qwen3_next_bf16/config.json"));
  next.erase("rope_parameters");  // Qwen3-Next's default partial rotary: 0.25
  c = hf_model_info_from_json(next, "config.json").config;
  EXPECT_EQ(c.partial_rotary_factor, 0.25);
  EXPECT_EQ(c.rotary_dim(), 4);
  EXPECT_EQ(c.gate.position, GatePosition::sdpa);
}

}  // namespace
}  // namespace gattn
