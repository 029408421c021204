// The GGUF reader against PyPI gguf (tests/fixtures/gguf/, tools/reference/make_gguf_fixtures.py),
// and a clear error for every lie a header can tell.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "infer/gguf_tokenizer.h"
#include "io/gguf.h"
#include "io/gguf_model.h"
#include "io/hf_weights.h"
#include "ops/ggml_blocks.h"
#include "temp_folder.h"
#include "util/error.h"

namespace gattn {
namespace {

const std::string kFixture = std::string(GATTN_FIXTURE_DIR) + "/gguf/reader";

nlohmann::json expected_reading() {
  std::ifstream in(kFixture + ".json");
  return nlohmann::json::parse(in);
}

TEST(GgufFixture, MetadataReadsAsPyPiGgufReadsIt) {
  const GgufReader r(kFixture + ".gguf");
  const nlohmann::json want = expected_reading()["metadata"];
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), 64u);
  EXPECT_EQ(r.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(r.get_string("general.name"), want["general.name"].get<std::string>());
  for (const char* key : {"test.u8", "test.i8", "test.u16", "test.i16", "test.u32", "test.i32",
                          "test.u64", "test.i64"})
    EXPECT_EQ(r.get_int(key), want[key].get<int64_t>()) << key;
  EXPECT_EQ(r.get_float("test.f32"), want["test.f32"].get<double>());
  EXPECT_EQ(r.get_float("test.f64"), want["test.f64"].get<double>());
  EXPECT_TRUE(r.get_bool("test.bool"));
  EXPECT_EQ(r.get_strings("test.strings"), want["test.strings"].get<std::vector<std::string>>());
  EXPECT_EQ(r.get_ints("test.ints"), want["test.ints"].get<std::vector<int64_t>>());
  EXPECT_EQ(r.get_floats("test.floats"), want["test.floats"].get<std::vector<double>>());
  // A u64 above 2^63 is kept, and refused by name where an int64 is asked for.
  EXPECT_EQ(uint64_t(r.find_value("test.u64_big")->integers[0]),
            want["test.u64_big"].get<uint64_t>());
  EXPECT_THROW(r.get_int("test.u64_big"), Error);
}

TEST(GgufFixture, TensorInfosReadAsPyPiGgufReadsThem) {
  const GgufReader r(kFixture + ".gguf");
  const nlohmann::json want = expected_reading()["tensors"];
  ASSERT_EQ(r.tensors().size(), want.size());
  for (const nlohmann::json& w : want) {
    const GgufTensor& t = r.get(w["name"].get<std::string>());
    EXPECT_EQ(t.type, w["type"].get<uint32_t>()) << t.name;
    // PyPI gguf lists the shape in ggml's order (ne[0] first), as GgufTensor does.
    EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>()) << t.name;
    EXPECT_EQ(t.offset, w["offset"].get<uint64_t>()) << t.name;
    EXPECT_EQ(t.bytes, w["bytes"].get<uint64_t>()) << t.name;
    EXPECT_EQ(t.rows * t.row_bytes, int64_t(t.bytes)) << t.name;
  }
  const GgufTensor& f = r.get("t.f32");
  const std::vector<float> values = [&] {
    std::vector<float> v(size_t(f.numel));
    std::memcpy(v.data(), f.data, f.bytes);
    return v;
  }();
  const auto& want_values = want[0]["values"];
  ASSERT_EQ(want[0]["name"], "t.f32");
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], want_values[i].get<float>()) << i;
  EXPECT_EQ(ggml_type_name(r.get("t.q4_K").type), "q4_K");
  EXPECT_EQ(ggml_type_name(r.get("t.q6_K").type), "q6_K");
}

// Every type's rows dequantized as PyPI gguf's numpy dequantizers give them: exactly for the
// formats whose values are one product (F16, BF16, Q8_0, Q4_0), within 2 ulp for the K-quants
// (numpy orders their products differently).
TEST(GgufFixture, RowsDequantizeAsPyPiGgufDequantizesThem) {
  const GgufReader r(kFixture + ".gguf");
  const nlohmann::json reading = expected_reading();  // alive through the loop (not a temporary)
  for (const nlohmann::json& w : reading["tensors"]) {
    const GgufTensor& t = r.get(w["name"].get<std::string>());
    std::vector<float> got(size_t(t.numel));
    for (int64_t row = 0; row < t.rows; ++row)
      ggml::dequantize_row(t.type, t.data + row * t.row_bytes, t.shape[0],
                           got.data() + row * t.shape[0]);
    const auto want = w["values"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size()) << t.name;
    const bool k_quant = t.type == uint32_t(GgmlType::q4_k) || t.type == uint32_t(GgmlType::q6_k);
    for (size_t i = 0; i < got.size(); ++i) {
      if (k_quant)
        ASSERT_NEAR(got[i], want[i], 2.5e-7f * std::fabs(want[i]) + 1e-30f) << t.name << " " << i;
      else
        ASSERT_EQ(got[i], want[i]) << t.name << " " << i;
    }
  }
}

TEST(GgufFixture, TypedGettersNameTheKeyAndTheType) {
  const GgufReader r(kFixture + ".gguf");
  try {
    r.get_string("test.u32");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'test.u32' is a u32, expected a string"),
              std::string::npos)
        << e.what();
  }
  try {
    r.get_int("qwen3.block_count");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'qwen3.block_count' is missing"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(r.get_strings("test.ints"), Error);
  EXPECT_THROW(r.get_float("test.strings"), Error);
  EXPECT_THROW(r.get("blk.0.attn_q.weight"), Error);
}

// A tiny Qwen3 saved by transformers (tests/fixtures/hf/qwen3_f32), written as GGUF by PyPI gguf
// with llama.cpp's names and keys: the same config, and every parameter the same value as the
// folder's (F32: bitwise; F16 and BF16 within their rounding, F16's subnormals included; BF16
// storage: the same bits as the folder read into bf16).
class GgufQwen3 : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufQwen3, LoadsAsTheHuggingFaceFolderItWasWrittenFrom) {
  const std::string dtype = GetParam();
  const std::string gguf = std::string(GATTN_FIXTURE_DIR) + "/gguf/qwen3_" + dtype + ".gguf";
  const std::string folder = std::string(GATTN_FIXTURE_DIR) + "/hf/qwen3_f32";
  ASSERT_TRUE(is_gguf_file(gguf));
  EXPECT_FALSE(is_gguf_file(folder));
  const auto theirs = load_any_model(folder);
  const auto ours = load_any_model(gguf);
  EXPECT_EQ(config_to_json(ours->config()), config_to_json(theirs->config()));
  ASSERT_EQ(ours->size(), theirs->size());
  const double tolerance = dtype == "f32" ? 0 : dtype == "f16" ? 1.0 / 2048 : 1.0 / 256;
  for (int64_t i = 0; i < ours->size(); ++i) {
    const float a = ours->data()[i], b = theirs->data()[i];
    const double subnormal_step = dtype == "f16" ? std::ldexp(1.0, -25) : 0;  // half of 2^-24
    ASSERT_LE(std::fabs(a - b), tolerance * std::fabs(b) + subnormal_step)
        << "parameter " << i << " " << dtype;
  }
  if (dtype != "bf16") return;
  const auto ours16 = load_any_model(gguf, discard_log(), WeightDtype::bf16);
  const auto theirs16 = load_any_model(folder, discard_log(), WeightDtype::bf16);
  for (const TensorSpec& t : ours16->layout().tensors()) {
    if (t.elementwise) continue;
    const WeightView a = ours16->matrix(t.offset, t.shape[0], t.numel / t.shape[0]);
    const WeightView b = theirs16->matrix(t.offset, t.shape[0], t.numel / t.shape[0]);
    ASSERT_EQ(std::memcmp(a.bf16(), b.bf16(), size_t(t.numel) * 2), 0) << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GgufQwen3, ::testing::Values("f32", "f16", "bf16"));

TEST(GgufModel, AFileWithoutTheModelsTensorsIsNamed) {
  try {
    load_any_model(kFixture + ".gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'token_embd.weight' is missing"),
              std::string::npos)
        << e.what();
  }
}

TEST(GgufModel, TensorNamesMapToHuggingFacesNames) {
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.11.ffn_down.weight"),
            "model.layers.11.mlp.down_proj.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.0.attn_k_norm.weight"),
            "model.layers.0.self_attn.k_norm.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("output.weight"), "lm_head.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.0.ssm_a"), "");
  EXPECT_EQ(hf_name_of_gguf_tensor("rope_freqs.weight"), "");
}

// A GGUF file's tokenizer.ggml.* metadata, written as llama.cpp's converter writes it from a
// tokenizer.json, encodes every edge case into the ids Hugging Face `tokenizers` gives for that
// tokenizer.json (tools/reference/make_gguf_fixtures.py), and decodes them back.
class GgufTokenizer : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufTokenizer, EncodesAsHuggingFaceEncodesTheTokenizerItWasWrittenFrom) {
  const std::string dir = std::string(GATTN_FIXTURE_DIR) + "/gguf/";
  std::ifstream in(dir + "tokenizer_expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  const Tokenizer t = gguf_tokenizer(dir + "tokenizer_" + GetParam() + ".gguf");
  const auto texts = want["texts"].get<std::vector<std::string>>();
  const auto ids = want[GetParam()].get<std::vector<std::vector<uint32_t>>>();
  ASSERT_EQ(texts.size(), ids.size());
  ASSERT_GT(texts.size(), 40u);
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(t.encode(texts[i]), ids[i]) << GetParam() << ": " << texts[i];
    if (std::string(GetParam()) == "gpt2") {  // no NFC: the text comes back as it was
      EXPECT_EQ(t.decode(ids[i]), texts[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pretokenizers, GgufTokenizer,
                         ::testing::Values("qwen2", "qwen35", "gpt2"));

TEST(GgufTokenizerErrors, OtherModelsAndPretokenizersAreNamed) {
  try {
    gguf_tokenizer(kFixture + ".gguf");  // no tokenizer metadata
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'tokenizer.ggml.model' is missing"), std::string::npos)
        << e.what();
  }
}

// Writes GGUF files byte by byte, so a test can say exactly which claim is false.
class GgufBytes {
 public:
  GgufBytes& u32(uint32_t v) { return put(&v, 4); }
  GgufBytes& u64(uint64_t v) { return put(&v, 8); }
  GgufBytes& str(const std::string& s) {
    u64(s.size());
    bytes_ += s;
    return *this;
  }
  GgufBytes& header(uint32_t version, uint64_t tensors, uint64_t values) {
    bytes_ += "GGUF";
    return u32(version).u64(tensors).u64(values);
  }
  GgufBytes& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  GgufBytes& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
  GgufBytes& tensor(const std::string& name, std::vector<int64_t> shape, uint32_t type,
                    uint64_t offset) {
    str(name).u32(uint32_t(shape.size()));
    for (int64_t d : shape) u64(uint64_t(d));
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(size_t alignment) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, '\0');
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes_.append(n, '\0');
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  GgufBytes& put(const void* p, size_t n) {
    bytes_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string bytes_;
};

class GgufErrors : public TempFolderTest {
 protected:
  std::string error_of(const GgufBytes& file) {
    const std::string p = path("bad.gguf");
    std::ofstream(p, std::ios::binary) << file.bytes();
    try {
      GgufReader r(p);
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(p), std::string::npos) << message;
      return message;
    }
    return "no error";
  }
};

TEST_F(GgufErrors, AWellFormedFileOfOneTensorReads) {
  GgufBytes f;
  f.header(3, 1, 0).tensor("w", {64, 2}, 8, 0).pad_to(32).zeros(2 * 2 * 34);
  EXPECT_EQ(error_of(f), "no error");
}

TEST_F(GgufErrors, EveryFalseClaimIsNamed) {
  const auto expect = [&](const GgufBytes& f, const std::string& says) {
    const std::string message = error_of(f);
    EXPECT_NE(message.find(says), std::string::npos) << message;
  };
  expect(GgufBytes().u32(0), "not a GGUF file");
  expect(GgufBytes().header(1, 0, 0), "GGUF version 1");
  expect(GgufBytes().header(0x03000000, 0, 0), "big-endian");
  expect(GgufBytes().header(3, 0, 1).str("abcdefgh"), "ends inside a value type");
  expect(GgufBytes().header(3, uint64_t(1) << 60, 0), "the tensor count is 1152921504606846976");
  expect(GgufBytes().header(3, 0, 2).kv_u32("a", 1).kv_u32("a", 2), "'a' appears twice");
  expect(GgufBytes().header(3, 0, 1).kv_u32("", 1), "key 0 is empty");
  expect(GgufBytes().header(3, 0, 1).str("k").u32(13), "value type 13");
  expect(GgufBytes().header(3, 0, 1).str("k").u32(9).u32(9).u64(0), "array of arrays");
  expect(GgufBytes().header(3, 0, 1).str("k").u32(9).u32(8).u64(uint64_t(1) << 40),
         "an array's length is 1099511627776");
  expect(GgufBytes().header(3, 0, 1).str("k").u32(8).u64(1000).zeros(10), "a metadata value");
  expect(GgufBytes().header(3, 0, 1).kv_u32("general.alignment", 48), "not a power of 2");
  expect(GgufBytes().header(3, 0, 1).str("general.alignment").u32(8).str("32"), "must be a u32");
  expect(GgufBytes().header(3, 1, 0).tensor(std::string(64, 'n'), {4}, 0, 0), "at most 63");
  expect(GgufBytes().header(3, 2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32),
         "'w' appears twice");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0), "5 dimensions");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {-1}, 0, 0), "dimension 0 is -1");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {int64_t(1) << 40, int64_t(1) << 40}, 0, 0),
         "more values than fit in 64 bits");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {4, int64_t(1) << 40}, 0, 0),
         "do not fit in the file");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {int64_t(1) << 62}, 0, 0),
         "a row of 4611686018427387904 values does not fit");  // 2^64 bytes: no wrap to 0
  expect(GgufBytes().header(3, 1, 0).tensor("w", {int64_t(1) << 61}, 28, 0),
         "a row of 2305843009213693952 values does not fit");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {32}, 16, 0), "iq2_xxs is not one gattn reads");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {32}, 77, 0), "type 77 is not one gattn reads");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {100}, 12, 0),
         "100 values per row, not a whole number of q4_K blocks of 256");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {8}, 0, 32).pad_to(32).zeros(64),
         "starts at data offset 32, expected 0");
  expect(GgufBytes()
             .header(3, 2, 0)
             .tensor("a", {4}, 0, 0)
             .tensor("b", {4}, 0, 16)
             .pad_to(32)
             .zeros(64),
         "starts at data offset 16, expected 32");
  expect(GgufBytes().header(3, 1, 0).tensor("w", {64}, 0, 0).pad_to(32).zeros(255),
         "runs past the end of the file");
}

TEST_F(GgufErrors, AZeroHeadCountIsNamedNotDividedBy) {
  GgufBytes f;
  f.header(3, 1, 4)
      .kv_str("general.architecture", "qwen3")
      .kv_u32("qwen3.embedding_length", 64)
      .kv_u32("qwen3.block_count", 1)
      .kv_u32("qwen3.attention.head_count", 0)
      .tensor("token_embd.weight", {64, 8}, 0, 0)
      .pad_to(32)
      .zeros(64 * 8 * 4);
  const std::string p = path("heads.gguf");
  std::ofstream(p, std::ios::binary) << f.bytes();
  try {
    gguf_config(GgufReader(p));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'qwen3.attention.head_count' is 0"), std::string::npos)
        << e.what();
  }
}

// A block count beyond the file's tensors is named before a layout of that many layers is built
// (a fuzzer's file: 6,356,992 layers, 25 tensors).
TEST_F(GgufErrors, ABlockCountBeyondTheTensorsIsNamed) {
  GgufBytes f;
  f.header(3, 1, 4)
      .kv_str("general.architecture", "qwen3")
      .kv_u32("qwen3.embedding_length", 64)
      .kv_u32("qwen3.block_count", 6356992)
      .kv_u32("qwen3.attention.head_count", 4)
      .tensor("token_embd.weight", {64, 8}, 0, 0)
      .pad_to(32)
      .zeros(64 * 8 * 4);
  const std::string p = path("layers.gguf");
  std::ofstream(p, std::ios::binary) << f.bytes();
  try {
    gguf_config(GgufReader(p));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'qwen3.block_count' gives 6356992 layers, but the file holds 1 tensors"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(GgufErrors, TokenizersGattnCannotReproduceAreNamed) {
  const auto message = [&](const GgufBytes& f) {
    const std::string p = path("tok.gguf");
    std::ofstream(p, std::ios::binary) << f.bytes();
    try {
      gguf_tokenizer(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(GgufBytes().header(3, 0, 1).kv_str("tokenizer.ggml.model", "llama"))
                .find("tokenizer.ggml.model is 'llama'"),
            std::string::npos);
  EXPECT_NE(message(GgufBytes()
                        .header(3, 0, 2)
                        .kv_str("tokenizer.ggml.model", "gpt2")
                        .kv_str("tokenizer.ggml.pre", "llama-bpe"))
                .find("tokenizer.ggml.pre is 'llama-bpe'"),
            std::string::npos);
  EXPECT_NE(message(GgufBytes()
                        .header(3, 0, 4)
                        .kv_str("tokenizer.ggml.model", "gpt2")
                        .kv_str("tokenizer.ggml.pre", "qwen2")
                        .str("tokenizer.ggml.tokens")
                        .u32(9)
                        .u32(8)
                        .u64(0)
                        .str("tokenizer.ggml.merges")
                        .u32(9)
                        .u32(8)
                        .u64(1)
                        .str("ab"))
                .find("not two tokens split by a space"),
            std::string::npos);
}

}  // namespace
}  // namespace gattn
