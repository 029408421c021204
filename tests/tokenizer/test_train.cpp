// Training: on the sample, gattn makes exactly the merges HF's BpeTrainer makes (same data, same
// vocab size) and the committed gattn_trained.json; ids, tie-breaking, stopping, thread counts,
// save/load, progress and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sample.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;

class Train : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_train_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path dir_;
};

std::string merges_text(const Tokenizer& tok) {
  std::string text;
  for (const auto& [left, right] : tok.merges()) text += left + " " + right + "\n";
  return text;
}

TEST_F(Train, OnTheSampleItMakesHfsMergesAndTheCommittedTokenizer) {
  const testing::Sample& s = testing::sample();
  const nlohmann::json& hf = s.expected.at("hf_bpe_trainer_vs_gattn");
  const Tokenizer trained = Tokenizer::train({s.folder}, hf.at("vocab_size").get<int>());
  const Tokenizer committed = Tokenizer::load(testing::fixture_path("gattn_trained.json"));
  ASSERT_EQ(trained.vocab_size(), committed.vocab_size());
  EXPECT_EQ(trained.merges(), committed.merges());
  for (uint32_t id = 0; id < uint32_t(trained.vocab_size()); ++id)
    ASSERT_EQ(trained.id_to_token(id), committed.id_to_token(id)) << id;
  // HF's BpeTrainer on the same documents: every merge the same, in the same order.
  EXPECT_EQ(hf.at("identical_leading_merges").get<size_t>(), trained.merges().size());
  EXPECT_EQ(hf.at("hf_merges").get<size_t>(), trained.merges().size());
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(testing::fnv1a64(merges_text(trained))));
  EXPECT_EQ(hash, hf.at("hf_merges_fnv1a64").get<std::string>());
}

TEST_F(Train, IdsAreSpecialsThenBytesByCharacterThenMergesAndVocabSizeCountsThemAll) {
  const std::string doc = write("a.txt", "the cat sat on the mat; the hat\n");
  const Tokenizer tok = Tokenizer::train({doc}, 262);
  EXPECT_EQ(tok.vocab_size(), 262);
  EXPECT_EQ(tok.merges().size(), 5u);
  EXPECT_EQ(tok.end_of_text_id(), 0u);
  EXPECT_EQ(tok.id_to_token(1), "!");    // the smallest byte-level character, U+0021
  EXPECT_EQ(tok.id_to_token(256), "Ń");  // the largest, U+0143 (byte 0xAD)
  EXPECT_EQ(tok.merges()[0], (std::pair<std::string, std::string>{"a", "t"}));  // 5 times
}

TEST_F(Train, EqualCountsMergeTheSmallerIdPairFirst) {
  const std::string doc = write("a.txt", "xy\nab\n");
  const Tokenizer tok = Tokenizer::train({doc}, 259);
  using Merge = std::pair<std::string, std::string>;
  EXPECT_EQ(tok.merges(), (std::vector<Merge>{{"a", "b"}, {"x", "y"}}));
}

TEST_F(Train, StopsWhenNoPairIsLeft) {
  const std::string doc = write("a.txt", "ab ab");
  const Tokenizer tok = Tokenizer::train({doc}, 1000);
  EXPECT_EQ(tok.merges().size(), 2u);  // "a b" (twice), then "Ġ ab"
  EXPECT_EQ(tok.vocab_size(), 259);
}

TEST_F(Train, ThreadCountDoesNotChangeTheResult) {
  const testing::Sample& s = testing::sample();
  const std::string doc = s.folder + "/05_ru.txt";
  auto train_with = [&](int threads) {
    const ThreadScope scope(threads);
    return Tokenizer::train({doc, s.folder + "/02_ja.txt"}, 2000);
  };
  const Tokenizer one = train_with(1), two = train_with(2);
  EXPECT_EQ(one.merges(), two.merges());
}

TEST_F(Train, SavedFileLoadsBackTheSameTokenizer) {
  const std::string doc = write("a.txt", "Tokenizers split text. Split, split, split!\n");
  const Tokenizer tok = Tokenizer::train({doc}, 280);
  const std::string path = (dir_ / "tok.json").string();
  tok.save(path);
  const Tokenizer back = Tokenizer::load(path);
  EXPECT_EQ(back.merges(), tok.merges());
  EXPECT_EQ(back.vocab_size(), tok.vocab_size());
  EXPECT_EQ(back.encode("Split text, tokenizers!"), tok.encode("Split text, tokenizers!"));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(Train, ReportsProgressAndFinishes) {
  const std::string doc = write("a.txt", "aaa bbb aaa\n");
  int counting = 0, done = 0;
  TrainOptions options;
  options.on_progress = [&](const TrainProgress& p) {
    if (p.stage == TrainProgress::Stage::counting) {
      ++counting;
      EXPECT_EQ(p.documents, 1);
      EXPECT_EQ(p.bytes, 12);
    }
    if (p.stage == TrainProgress::Stage::done) {
      ++done;
      EXPECT_EQ(p.merges_done, 3);
    }
  };
  Tokenizer::train({doc}, 260, options);
  EXPECT_EQ(counting, 1);
  EXPECT_EQ(done, 1);
}

TEST_F(Train, BadRequestsAreErrors) {
  const std::string doc = write("a.txt", "text");
  const auto error_of = [](const auto& call) -> std::string {
    try {
      call();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of([&] { Tokenizer::train({doc}, 256); })
                .find("vocab_size 256 is too small: the 256 byte tokens and 1 special token(s) "
                      "need 257"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::train({doc + ".absent"}, 300); }).find("no such file"),
            std::string::npos);
  TrainOptions options;
  options.special_tokens = {"<pad>"};
  EXPECT_NE(error_of([&] {
              Tokenizer::train({doc}, 300, options);
            }).find("the special tokens must include <|endoftext|>"),
            std::string::npos);
}

}  // namespace
}  // namespace gattn
