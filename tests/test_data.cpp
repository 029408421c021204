// Token shards (format checks) and the data loader (windows, determinism, epochs).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "io/token_shard.h"
#include "train/loader.h"
#include "util/checksum.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

class Shards : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_data_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // three documents: BOS=0, tokens 1..: [0 1 2 3] [0 4 5] [0 6 7 8 9 10 11 12 13 14 15 16]
    tokens_ = {0, 1, 2, 3, 0, 4, 5, 0, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    starts_ = {0, 4, 7};
    write_token_shard(path("a.bin"), tokens_, starts_, 17, 0, 123);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string error_of(const std::string& file) {
    try {
      TokenShard shard(file);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  void corrupt(const std::string& name, size_t offset, const std::string& bytes) {
    if (!fs::exists(path(name))) fs::copy_file(path("a.bin"), path(name));
    std::fstream f(path(name), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.write(bytes.data(), bytes.size());
  }
  // Edits the copy `name` of a.bin at `offset`, then records the data's new checksum in the
  // header, so that the checks behind the checksum are reached.
  void corrupt_with_checksum(const std::string& name, size_t offset, const std::string& bytes) {
    corrupt(name, offset, bytes);
    std::ifstream in(path(name), std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const uint64_t sum = checksum64(file.data() + 64, file.size() - 64);
    corrupt(name, 48, std::string(reinterpret_cast<const char*>(&sum), 8));
  }
  fs::path dir_;
  std::vector<uint32_t> tokens_;
  std::vector<uint64_t> starts_;
};

TEST_F(Shards, RoundTrip) {
  const TokenShard shard(path("a.bin"));
  EXPECT_EQ(shard.info().tokens, tokens_.size());
  EXPECT_EQ(shard.info().documents, 3u);
  EXPECT_EQ(shard.info().token_bytes, 2u);
  EXPECT_EQ(shard.info().vocab_size, 17u);
  EXPECT_EQ(shard.info().text_bytes, 123u);
  for (size_t i = 0; i < tokens_.size(); ++i) EXPECT_EQ(shard.token(i), tokens_[i]);
  EXPECT_EQ(shard.document_start(2), 7u);
  std::vector<uint32_t> wide(tokens_);
  wide[3] = 70000;
  write_token_shard(path("wide.bin"), wide, starts_, 70001, 0, 1);
  EXPECT_EQ(TokenShard(path("wide.bin")).info().token_bytes, 4u);
  EXPECT_EQ(TokenShard(path("wide.bin")).token(3), 70000u);
}

TEST_F(Shards, RejectsBadFiles) {
  fs::copy_file(path("a.bin"), path("short.bin"));
  fs::resize_file(path("short.bin"), fs::file_size(path("short.bin")) - 3);
  EXPECT_NE(error_of(path("short.bin")).find("(truncated or not a shard)"), std::string::npos);
  corrupt("magic.bin", 0, "GPT2TOKS");
  EXPECT_NE(error_of(path("magic.bin")).find("not a token shard (wrong magic bytes)"),
            std::string::npos);
  corrupt("version.bin", 8, std::string("\x07\x00\x00\x00", 4));
  EXPECT_NE(error_of(path("version.bin")).find("format version 7, this build reads 2"),
            std::string::npos);
  // Version 2 checks its data against the header's checksum first; version 1 only its ranges.
  corrupt("flipped.bin", 64 + 2 * 5 + 1, std::string("\x01", 1));
  EXPECT_NE(error_of(path("flipped.bin")).find("token data is corrupt: checksum "),
            std::string::npos);
  corrupt_with_checksum("token.bin", 64 + 2 * 5, std::string("\x20\x00", 2));
  EXPECT_NE(error_of(path("token.bin"))
                .find("token 32 at position 5 is not below the vocabulary size 17"),
            std::string::npos);
  corrupt_with_checksum("starts.bin", 64 + 2 * tokens_.size() + 8,
                        std::string("\x05\0\0\0\0\0\0\0", 8));
  EXPECT_NE(error_of(path("starts.bin")).find("document 1 starts at 5"), std::string::npos);
  std::ofstream(path("text.bin")) << "hello";
  EXPECT_NE(error_of(path("text.bin")).find("not a token shard (5 bytes"), std::string::npos);
  EXPECT_THROW(write_token_shard(path("bad.bin"), {0, 20}, {0}, 17, 0, 1), Error);
}

// D13: editing the version byte to 1 switched the checksum and the tokenizer check off.
TEST_F(Shards, Version1IsRefusedAndVersion2RecordsTheTokenizer) {
  corrupt("v1.bin", 8, std::string("\x01\x00\x00\x00", 4));
  EXPECT_NE(error_of(path("v1.bin")).find("format version 1 has no checksum"), std::string::npos);
  EXPECT_NE(error_of(path("v1.bin")).find("re-make this shard (`gattn data`)"), std::string::npos);
  write_token_shard(path("v2.bin"), tokens_, starts_, 17, 0, 123, 0x1234abcdULL);
  const TokenShard v2(path("v2.bin"));
  EXPECT_EQ(v2.info().version, 2u);
  EXPECT_EQ(v2.info().tokenizer_fingerprint, 0x1234abcdULL);
}

TEST_F(Shards, BosWindowsStartWithBosAndCoverTheStreamOncePerEpoch) {
  const TokenShard shard(path("a.bin"));
  DataLoader loader(shard, {1, 4, WindowKind::bos, 5, true});
  ASSERT_EQ(loader.windows_per_epoch(), 19 / 4);
  std::multiset<int32_t> seen;
  for (int64_t row = 0; row < loader.windows_per_epoch(); ++row) {
    int32_t ids[4], targets[4];
    loader.fill(row, 1, ids, targets);
    EXPECT_EQ(ids[0], 0);
    for (int t = 1; t < 4; ++t) EXPECT_EQ(ids[t], targets[t - 1]);
    seen.insert(targets, targets + 4);
  }
  // every stream token of the 4 windows [0, 16) is a target exactly once
  EXPECT_EQ(seen, std::multiset<int32_t>(tokens_.begin(), tokens_.begin() + 16));
}

TEST_F(Shards, PlainWindowsShiftByOne) {
  const TokenShard shard(path("a.bin"));
  DataLoader loader(shard, {2, 5, WindowKind::plain, 0, false});
  int32_t ids[10], targets[10];
  loader.fill(1, 2, ids, targets);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(ids[i], int32_t(tokens_[5 + i]));
    EXPECT_EQ(targets[i], int32_t(tokens_[6 + i]));
    EXPECT_EQ(ids[5 + i], int32_t(tokens_[10 + i]));
  }
}

TEST_F(Shards, OrderIsAFunctionOfSeedAndRow) {
  std::vector<uint32_t> many(5000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i % 97 == 0 ? 0 : uint32_t(1 + i % 50);
  std::vector<uint64_t> starts;
  for (size_t i = 0; i < many.size(); i += 97) starts.push_back(i);
  write_token_shard(path("many.bin"), many, starts, 51, 0, 1);
  const TokenShard shard(path("many.bin"));
  DataLoader a(shard, {4, 16, WindowKind::bos, 7, true}),
      b(shard, {4, 16, WindowKind::bos, 7, true}), c(shard, {4, 16, WindowKind::bos, 8, true});
  std::vector<int32_t> ia(64), ta(64), ib(64), tb(64), ic(64), tc(64);
  a.fill(1000, 4, ia.data(), ta.data());  // a later epoch, reached directly
  b.fill(0, 4, ib.data(), tb.data());
  b.fill(1000, 4, ib.data(), tb.data());
  c.fill(1000, 4, ic.data(), tc.data());
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  std::vector<int32_t> epoch0(64), epoch1(64);
  a.fill(0, 4, ia.data(), epoch0.data());
  a.fill(a.windows_per_epoch(), 4, ia.data(), epoch1.data());
  EXPECT_NE(epoch0, epoch1) << "each epoch has its own order";
}

}  // namespace
}  // namespace gattn
