// Loading validates tokenizer.json: each way a file can be wrong or unsupported gets an error that
// names the file and the field, and says what was expected.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "io/file.h"
#include "sample.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace gattn {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

class LoadErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() /
             ("gattn_tok_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
                .string();
  }
  void TearDown() override { fs::remove(path_); }

  void write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }

  // The error of loading the small valid tokenizer after `change`, or "" if it loads.
  std::string error_after(const std::function<void(json&)>& change) {
    json j = json::parse(read_text_file(testing::fixture_path("tiny_nfc.json")));
    change(j);
    write(j.dump());
    return error_loading();
  }
  std::string error_loading() {
    try {
      Tokenizer::load(path_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  // Checks that the message starts with the file's path and holds `expected`.
  void expect_error(const std::string& message, const std::string& expected) {
    EXPECT_EQ(message.rfind(path_ + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(expected), std::string::npos)
        << "expected \"" << expected << "\" in: " << message;
  }

  std::string path_;
};

TEST_F(LoadErrors, TheUnchangedFileLoads) {
  EXPECT_EQ(error_after([](json&) {}), "");
}

TEST_F(LoadErrors, TruncatedJson) {
  const std::string text = read_text_file(testing::fixture_path("tiny_nfc.json"));
  write(text.substr(0, text.size() / 2));
  expect_error(error_loading(), "not valid JSON");
}

TEST_F(LoadErrors, MissingFile) {
  try {
    Tokenizer::load(path_ + ".absent");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".absent: cannot open for reading"), std::string::npos);
  }
}

TEST_F(LoadErrors, NotAnObject) {
  write("[1, 2]");
  expect_error(error_loading(), "top level: expected an object, found array");
}

TEST_F(LoadErrors, UnsupportedModel) {
  expect_error(error_after([](json& j) { j["model"]["type"] = "WordPiece"; }),
               "model.type: model \"WordPiece\" is not supported (supported: BPE)");
  expect_error(error_after([](json& j) { j.erase("model"); }), "model: missing");
  expect_error(error_after([](json& j) { j["model"]["dropout"] = 0.1; }),
               "model.dropout: number 0.1 is not supported");
  expect_error(error_after([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }),
               "model.continuing_subword_prefix: string \"##\" is not supported");
}

TEST_F(LoadErrors, UnsupportedPreTokenizers) {
  expect_error(error_after([](json& j) {
                 j["pre_tokenizer"] = {{"type", "Whitespace"}};
               }),
               "pre_tokenizer.type: pre-tokenizer \"Whitespace\" is not supported");
  expect_error(
      error_after([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; }),
      "pre_tokenizer.pretokenizers[0].behavior: \"Removed\" is not supported "
      "(supported: \"Isolated\")");
  expect_error(error_after([](json& j) {
                 j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true;
               }),
               "pre_tokenizer.pretokenizers[1].add_prefix_space: true is not supported");
  expect_error(
      error_after([](json& j) {
        auto& list = j["pre_tokenizer"]["pretokenizers"];
        std::swap(list[0], list[1]);
      }),
      "pre_tokenizer.pretokenizers[0].type: \"ByteLevel\" at this position is not supported");
  expect_error(error_after([](json& j) { j["pre_tokenizer"] = nullptr; }),
               "pre_tokenizer: null is not supported");
}

TEST_F(LoadErrors, BadRegex) {
  expect_error(error_after([](json& j) {
                 j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "[a-";
               }),
               "pre_tokenizer.pretokenizers[0].pattern.Regex: PCRE2 cannot compile the pattern");
}

TEST_F(LoadErrors, UnsupportedNormalizers) {
  expect_error(error_after([](json& j) {
                 j["normalizer"] = {{"type", "NFKC"}};
               }),
               "normalizer.type: normalizer \"NFKC\" is not supported (supported: NFC, a Sequence "
               "of NFC, or null)");
  expect_error(error_after([](json& j) {
                 j["normalizer"] = {{"type", "Sequence"},
                                    {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
               }),
               "normalizer.normalizers[1].type: normalizer \"Lowercase\" is not supported");
}

TEST_F(LoadErrors, UnsupportedDecoderPostProcessorTruncation) {
  expect_error(
      error_after([](json& j) {
        j["decoder"] = {{"type", "WordPiece"}};
      }),
      "decoder.type: decoder \"WordPiece\" is not supported (supported: ByteLevel or null)");
  expect_error(error_after([](json& j) {
                 j["post_processor"] = {{"type", "TemplateProcessing"}};
               }),
               "post_processor.type: post_processor \"TemplateProcessing\" is not supported");
  expect_error(error_after([](json& j) {
                 j["truncation"] = {{"max_length", 512}};
               }),
               "truncation: object of 1 field is not supported");
}

// A 100,000-deep array overflowed the stack while its error message was printed.
TEST_F(LoadErrors, DeeplyNestedJsonIsAnErrorNotACrash) {
  write("{\"truncation\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  expect_error(error_loading(), "not valid JSON (arrays and objects nested deeper than 64 levels");
}

// One id of 300,000,000 made the id tables grow to gigabytes before anything failed.
TEST_F(LoadErrors, HugeTokenIdIsRejectedBeforeAllocating) {
  expect_error(error_after([](json& j) { j["model"]["vocab"]["zz"] = 300000000; }),
               "token id 300000000 is too large for a file of ");
}

TEST_F(LoadErrors, MalformedVocab) {
  expect_error(error_after([](json& j) { j["model"]["vocab"] = json::array(); }),
               "model.vocab: expected an object of token -> id, found array");
  expect_error(error_after([](json& j) { j["model"]["vocab"]["zz"] = "7"; }),
               "model.vocab[\"zz\"]: expected a token id (an integer from 0 to 2^31-1), found "
               "string \"7\"");
  expect_error(error_after([](json& j) { j["model"]["vocab"]["zz"] = -3; }),
               "model.vocab[\"zz\"]: expected a token id");
  expect_error(error_after([](json& j) { j["model"]["vocab"]["zz"] = 97; }),
               "model.vocab: \"a\" and \"zz\" share id 97");
  expect_error(
      error_after([](json& j) { j["model"]["vocab"].erase("Ā"); }),
      "model.vocab: no token for byte 0x00 (\"Ā\"): a byte-level vocabulary needs all 256");
}

TEST_F(LoadErrors, MalformedMerges) {
  expect_error(error_after([](json& j) { j["model"]["merges"] = "a b"; }),
               "model.merges: expected an array, found string");
  expect_error(error_after([](json& j) { j["model"]["merges"][0] = "a b c"; }),
               "model.merges[0]: expected two tokens separated by one space, found \"a b c\"");
  expect_error(error_after([](json& j) { j["model"]["merges"][1] = 5; }),
               "model.merges[1]: expected [\"left\", \"right\"] or \"left right\", found number 5");
  expect_error(error_after([](json& j) {
                 j["model"]["merges"][2] = {"a", "a", "a"};
               }),
               "model.merges[2]: expected [\"left\", \"right\"]");
  EXPECT_EQ(error_after([](json& j) { j["model"]["merges"][0] = "b c"; }), "");  // older form
}

TEST_F(LoadErrors, MergesThatReferToUnknownTokens) {
  expect_error(error_after([](json& j) {
                 j["model"]["merges"][3] = {"Ġqq", "a"};
               }),
               "model.merges[3]: token \"Ġqq\" is not in model.vocab");
  expect_error(error_after([](json& j) {
                 j["model"]["merges"][3] = {"x", "y"};
               }),
               "model.merges[3]: merged token \"xy\" is not in model.vocab");
}

TEST_F(LoadErrors, BadAddedTokens) {
  expect_error(error_after([](json& j) { j["added_tokens"][1]["id"] = 400; }),
               "added_tokens[1]: \"<x>\" has id 400, but Hugging Face would give it id 269");
  expect_error(error_after([](json& j) { j["added_tokens"][0]["lstrip"] = true; }),
               "added_tokens[0].lstrip: true is not supported (supported: false)");
  expect_error(error_after([](json& j) { j["added_tokens"][0]["content"] = 3; }),
               "added_tokens[0].content: expected a string, found number 3");
  expect_error(error_after([](json& j) { j["added_tokens"][2]["content"] = "<x>"; }),
               "added_tokens[2]: \"<x>\" is listed twice");
}

TEST_F(LoadErrors, EndOfTextIdNeedsTheToken) {
  ASSERT_EQ(error_after([](json& j) { j["added_tokens"][0]["content"] = "<|eos|>"; }), "");
  const Tokenizer tok = Tokenizer::load(path_);
  try {
    tok.end_of_text_id();
    FAIL();
  } catch (const Error& e) {
    expect_error(e.what(), "has no <|endoftext|> token");
  }
}

}  // namespace
}  // namespace gattn
