// JSON from files and flags is parsed with a nesting limit and described in errors without being
// printed whole: a deeply nested value is a clear error, never a stack overflow.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "io/checkpoint.h"
#include "io/file.h"
#include "util/error.h"
#include "util/json_fields.h"
#include "util/json_parse.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string nested_array(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonParse, NestingUpToTheLimitParsesAndBeyondIsAnError) {
  EXPECT_TRUE(parse_json_text(nested_array(kMaxJsonDepth), "x").is_array());
  EXPECT_EQ(error_of([] { parse_json_text(nested_array(kMaxJsonDepth + 1), "flag"); }),
            "flag: not valid JSON (arrays and objects nested deeper than 64 levels at byte 64)");
  // Brackets inside strings (and escaped quotes) are text, not nesting.
  const std::string text = R"({"a": ")" + nested_array(100) + R"(\"[[["})";
  EXPECT_EQ(parse_json_text(text, "x").at("a").get<std::string>().size(), 204u);
  EXPECT_NE(error_of([] { parse_json_text("{\"a\": ", "x"); }).find("x: not valid JSON ("),
            std::string::npos);
}

TEST(JsonParse, SummaryNeverPrintsAContainerWhole) {
  EXPECT_EQ(json_summary(json::parse("[1, [2, 3]]")), "array of 2 elements");
  EXPECT_EQ(json_summary(json::parse(R"({"a": {}})")), "object of 1 field");
  EXPECT_EQ(json_summary(json(7)), "7");
  EXPECT_EQ(json_summary(json(std::string(200, 'x'))).size(), 80u);
}

// A config.json whose vocab_size was a 60,000-deep array crashed in the error message.
TEST(JsonParse, DeeplyNestedConfigFieldIsAClearError) {
  const std::string path =
      (fs::temp_directory_path() / ("gattn_deep_" + std::to_string(::getpid()) + ".json")).string();
  write_text_file_atomically(path, "{\"vocab_size\": " + nested_array(60000) + "}");
  EXPECT_EQ(error_of([&] { load_config(path); }),
            path + ": not valid JSON (arrays and objects nested deeper than 64 levels at byte 78)");
  fs::remove(path);
  const json config = json::parse(R"({"vocab_size": [[1]]})");
  JsonFields fields(config, "c.json");
  int vocab = 0;
  EXPECT_EQ(error_of([&] { fields.read("vocab_size", vocab); }),
            "c.json: field 'vocab_size': expected a positive integer, found array of 1 element");
}

}  // namespace
}  // namespace gattn
