// safetensors: round trips, dtype conversion, and a clear error for every lie a header can tell.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "temp_folder.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

class Safetensors : public TempFolderTest {
 protected:
  // A file with the given header JSON followed by `data_bytes` bytes.
  std::string raw(const std::string& name, const std::string& header, size_t data_bytes,
                  uint64_t claimed_length = 0) {
    std::ofstream out(path(name), std::ios::binary);
    const uint64_t n = claimed_length ? claimed_length : header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data_bytes, '\0');
    return path(name);
  }

  std::string error_of(const std::string& file) {
    try {
      SafetensorsReader reader(file);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(Safetensors, RoundTripsTensorsAndMetadata) {
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  const std::vector<int64_t> ids = {7, -1, 9};
  write_safetensors(path("x.safetensors"),
                    {{"a", Dtype::F32, {2, 3}, a.data()}, {"ids", Dtype::I64, {3}, ids.data()}},
                    {{"note", "hello"}});
  const SafetensorsReader r(path("x.safetensors"));
  EXPECT_EQ(r.read_floats("a"), a);
  EXPECT_EQ(r.read_ints("ids"), ids);
  EXPECT_EQ(r.get("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.metadata_value("note"), "hello");
  std::ifstream in(path("x.safetensors"), std::ios::binary);
  uint64_t header = 0;
  in.read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(header % 8, 0u) << "header padded to 8 bytes";
}

TEST_F(Safetensors, ConvertsHalfPrecisionFloats) {
  // BF16 1.5 = 0x3FC0; F16 -2.0 = 0xC000, 65504 = 0x7BFF, smallest subnormal 2^-24 = 0x0001
  const uint16_t bf16[] = {0x3FC0, 0xBF80};
  const uint16_t f16[] = {0xC000, 0x7BFF, 0x0001, 0x3C00};
  write_safetensors(path("h.safetensors"),
                    {{"b", Dtype::BF16, {2}, bf16}, {"h", Dtype::F16, {4}, f16}});
  const SafetensorsReader r(path("h.safetensors"));
  EXPECT_EQ(r.read_floats("b"), (std::vector<float>{1.5f, -1.0f}));
  EXPECT_EQ(r.read_floats("h"), (std::vector<float>{-2.0f, 65504.0f, std::ldexp(1.0f, -24), 1.0f}));
}

TEST_F(Safetensors, RejectsTruncatedFile) {
  const std::vector<float> a(100, 1.0f);
  write_safetensors(path("t.safetensors"), {{"a", Dtype::F32, {100}, a.data()}});
  fs::resize_file(path("t.safetensors"), fs::file_size(path("t.safetensors")) - 7);
  EXPECT_NE(
      error_of(path("t.safetensors"))
          .find(
              "tensor 'a': data_offsets [0, 400] lie outside the 393 data bytes (truncated file?)"),
      std::string::npos)
      << error_of(path("t.safetensors"));
}

TEST_F(Safetensors, RejectsEveryLieInTheHeader) {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  struct Case {
    std::string header;
    size_t data;
    uint64_t claimed;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{" + ok_entry + "}", 8, 1u << 30, "header length 1073741824 does not fit"},
      {"{\"a\":", 8, 0, "header: not valid JSON"},
      {"[1,2]", 8, 0, "header is not a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 12, 0,
       "data_offsets span 8 bytes but F32 [3] needs 12"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, 0, "lie outside"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8, 0,
       "lie outside the 8 data bytes"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8, 0,
       "data_offsets must be two non-negative integers"},
      {R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8, 0,
       "unsupported dtype \"Q4\""},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, 0,
       "has an invalid dimension"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", 8, 0,
       "expected an object with dtype, shape and data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, 0, "tensors overlap"},
      {R"({"__metadata__":{"k":1}})", 0, 0, "__metadata__ value 'k' is not a string"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file =
        raw("case" + std::to_string(i), cases[i].header, cases[i].data, cases[i].claimed);
    const std::string message = error_of(file);
    EXPECT_NE(message.find(cases[i].message), std::string::npos)
        << cases[i].header << " -> " << message;
    EXPECT_EQ(message.rfind(file, 0), 0u) << "names the file: " << message;
  }
  std::ofstream(path("tiny")) << "abc";
  EXPECT_NE(error_of(path("tiny")).find("not a safetensors file (3 bytes"), std::string::npos);
  EXPECT_NE(error_of(path("absent")).find("cannot open"), std::string::npos);
}

// A flipped bit inside tensor data loaded silently before checksums.
TEST_F(Safetensors, ChecksumsCatchAFlippedBitAndFilesWithoutThemStillLoad) {
  const std::vector<float> a = {1, 2, 3, 4};
  const std::string file = path("c.safetensors");
  write_safetensors(file, {{"w", Dtype::F32, {4}, a.data()}, {"v", Dtype::F32, {4}, a.data()}});
  EXPECT_EQ(SafetensorsReader(file).metadata().count("gattn.xxh3:v"), 1u);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);  // the last byte: tensor v's, written after w
    const char last = char(f.get());
    f.seekp(-1, std::ios::end);
    f.put(char(last ^ 1));
  }
  const std::string message = error_of(file);
  EXPECT_EQ(message.rfind(file + ": tensor 'v' is corrupt: its data has checksum ", 0), 0u)
      << message;
  EXPECT_EQ(
      error_of(raw("foreign", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)), "");
}

// D12: what Hugging Face's safetensors library refuses, gattn refused not: NUL padding, bytes that
// belong to no tensor, a key given twice.
TEST_F(Safetensors, RefusesWhatTheReferenceLibraryRefuses) {
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string a_late = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]})";
  const std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]})";
  EXPECT_EQ(error_of(raw("spaces", "{" + a + "}   ", 8)), "") << "space padding is allowed";
  EXPECT_EQ(error_of(raw("empty", R"({"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", 0)),
            "")
      << "an empty tensor takes no bytes";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {raw("nul", "{" + a + "}" + std::string(4, '\0'), 8), "header has a NUL byte"},
      {raw("trailing", "{" + a + "}", 12), "4 data bytes after the last tensor"},
      {raw("hole", "{" + a_late + "}", 16), "data bytes 0..8 belong to no tensor (a hole)"},
      {raw("gap", "{" + a + "," + R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]})" + "}",
           16),
       "data bytes 8..12 belong to no tensor"},
      {raw("twice", "{" + a + "," + a + "}", 8), "key 'a' appears twice in one object"},
      {raw("twice_meta", R"({"__metadata__":{"k":"1","k":"2"},)" + a + "}", 8),
       "key 'k' appears twice"},
      {raw("ok_then_dup", "{" + a + "," + b + "," + a + "}", 12), "key 'a' appears twice"}};
  for (const auto& [file, message] : cases)
    EXPECT_NE(error_of(file).find(message), std::string::npos) << file << " -> " << error_of(file);
}

// D13: a file carrying some gattn checksums must carry all of them, and no unknown gattn key; a
// gattn checkpoint (Checksums::required) must carry them even with none at all.
TEST_F(Safetensors, ChecksumsCannotBeSwitchedOffByEditingTheHeader) {
  const std::vector<float> v = {0, 0};  // the bytes raw() writes
  write_safetensors(path("w.safetensors"), {{"a", Dtype::F32, {2}, v.data()}});
  const SafetensorsReader written(path("w.safetensors"));
  const std::string sum = written.metadata_value("gattn.xxh3:a");
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string b = R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]})";
  const std::string with_a = R"({"__metadata__":{"gattn.xxh3:a":")" + sum + R"("},)";
  EXPECT_NE(error_of(raw("half", with_a + a + "," + b + "}", 16))
                .find("tensor 'b' has no checksum (__metadata__ 'gattn.xxh3:b')"),
            std::string::npos);
  EXPECT_NE(
      error_of(raw("renamed", R"({"__metadata__":{"gattn.ixh3:a":")" + sum + R"("},)" + a + "}", 8))
          .find("__metadata__ key 'gattn.ixh3:a' is not one gattn writes"),
      std::string::npos);
  const std::string foreign = raw("foreign", "{" + a + "}", 8);
  EXPECT_EQ(error_of(foreign), "");
  try {
    SafetensorsReader(foreign, Checksums::required);
    ADD_FAILURE() << "a file without checksums was read where they are required";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'a' has no checksum"), std::string::npos);
  }
  EXPECT_NO_THROW(SafetensorsReader(path("w.safetensors"), Checksums::required));
}

TEST_F(Safetensors, ReadersCheckTheDtype) {
  const std::vector<int32_t> ids = {1, 2};
  const std::vector<float> f = {1, 2};
  write_safetensors(path("d.safetensors"),
                    {{"ids", Dtype::I32, {2}, ids.data()}, {"f", Dtype::F32, {2}, f.data()}});
  const SafetensorsReader r(path("d.safetensors"));
  EXPECT_EQ(r.read_ints("ids"), (std::vector<int64_t>{1, 2}));
  EXPECT_THROW(r.read_floats("ids"), Error);
  EXPECT_THROW(r.read_ints("f"), Error);
  EXPECT_THROW(r.get("nope"), Error);
}

}  // namespace
}  // namespace gattn
