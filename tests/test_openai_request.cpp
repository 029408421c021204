// Parsing and validating OpenAI-compatible request bodies: every accepted form, and an Error
// naming the field for each bad one.
#include <gtest/gtest.h>

#include "serve/openai_request.h"
#include "util/error.h"

namespace gattn {
namespace {

std::string error_of(std::string_view body, bool chat = false) {
  try {
    chat ? parse_chat_request(body) : parse_completion_request(body);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OpenAiRequest, ReadsEveryCompletionField) {
  const OpenAiRequest r = parse_completion_request(
      R"({"model": "m", "prompt": "Hi", "max_tokens": 5, "temperature": 0.5, "top_p": 0.9,
          "top_k": 4, "min_p": 0.1, "repetition_penalty": 1.1, "seed": 7, "stop": ["a", "bc"],
          "logprobs": 2, "echo": true, "n": 1, "user": "u", "presence_penalty": 0})");
  EXPECT_FALSE(r.chat);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 4);
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.1);
  EXPECT_DOUBLE_EQ(r.sampling.repeat_penalty, 1.1);
  EXPECT_EQ(r.seed, 7u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_TRUE(r.echo);
  EXPECT_FALSE(r.stream);
}

TEST(OpenAiRequest, DefaultsAndNulls) {
  const OpenAiRequest r =
      parse_completion_request(R"({"prompt": "x", "max_tokens": null, "stop": "s"})");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.seed);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 1.0);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_EQ(r.stop, std::vector<std::string>{"s"});
}

TEST(OpenAiRequest, PromptAsTextOrTokenIds) {
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["one"]})").prompt, "one");
  EXPECT_EQ(parse_completion_request(R"({"prompt": [3, 4]})").prompt_ids,
            (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": [[5]]})").prompt_ids, std::vector<uint32_t>{5});
  EXPECT_NE(error_of(R"({"prompt": ["a", "b"]})").find("one prompt per request"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": [1, -2]})").find("non-negative"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": 5})").find("'prompt' must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"max_tokens": 5})").find("'prompt' is required"), std::string::npos);
}

TEST(OpenAiRequest, RejectsBadBodiesNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt": "x",)", "not valid JSON"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper"},
      {R"([1, 2])", "expected a JSON object"},
      {R"({"prompt": "x", "bogus": 1})", "unknown field 'bogus'"},
      {R"({"prompt": "x", "max_tokens": -1})", "'max_tokens' must be in [0"},
      {R"({"prompt": "x", "max_tokens": 2.5})", "'max_tokens' must be an integer"},
      {R"({"prompt": "x", "max_tokens": "5"})", "'max_tokens' must be an integer"},
      {R"({"prompt": "x", "temperature": "hot"})", "'temperature' must be a number"},
      {R"({"prompt": "x", "temperature": -0.1})", "'temperature' must be in"},
      {R"({"prompt": "x", "top_p": 0})", "'top_p' must be above 0"},
      {R"({"prompt": "x", "stream": "yes"})", "'stream' must be true or false"},
      {R"({"prompt": "x", "stop": [1]})", "'stop' must hold strings"},
      {R"({"prompt": "x", "stop": ""})", "must not be empty"},
      {R"({"prompt": "x", "n": 2})", "'n' must be in [1, 1]"},
      {R"({"prompt": "x", "logprobs": 21})", "'logprobs' must be in [0, 20]"},
      {R"({"prompt": "x", "stream": true, "logprobs": 1})", "not supported with 'stream'"},
      {R"({"prompt": "x", "frequency_penalty": 0.5})", "'frequency_penalty' must be in [0, 0]"},
      {R"({"prompt": "x", "seed": 1e30})", "'seed' must be an integer"},
  };
  for (const auto& [body, expected] : cases)
    EXPECT_NE(error_of(body).find(expected), std::string::npos)
        << body << " gave: " << error_of(body);
}

TEST(OpenAiRequest, ReadsChatMessages) {
  const OpenAiRequest r = parse_chat_request(
      R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
          {"role": "user", "content": "Hi", "name": "ann"}], "max_completion_tokens": 3,
          "stream": true})");
  EXPECT_TRUE(r.chat);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi");
  EXPECT_EQ(r.max_tokens, 3);
  EXPECT_TRUE(r.stream);
}

TEST(OpenAiRequest, ReadsChatLogprobsAndStreamOptions) {
  const auto chat = [](const std::string& fields) {
    return parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], )" + fields +
                              "}");
  };
  EXPECT_EQ(chat(R"("logprobs": true, "top_logprobs": 5)").logprobs, 5);
  EXPECT_EQ(chat(R"("logprobs": true)").logprobs, 0);
  EXPECT_EQ(chat(R"("logprobs": false)").logprobs, -1);
  EXPECT_EQ(chat(R"("logprobs": null, "top_logprobs": null)").logprobs, -1);
  const OpenAiRequest streamed =
      chat(R"("stream": true, "logprobs": true, "stream_options": {"include_usage": true})");
  EXPECT_TRUE(streamed.include_usage);
  EXPECT_EQ(streamed.logprobs, 0);
  EXPECT_FALSE(chat(R"("stream": true, "stream_options": {})").include_usage);
  EXPECT_TRUE(parse_completion_request(
                  R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": true}})")
                  .include_usage);
}

TEST(OpenAiRequest, RejectsBadChats) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages": []})", "'messages' must be a non-empty array"},
      {R"({"prompt": "x", "messages": [{"role": "user", "content": "x"}]})",
       "unknown field 'prompt'"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "'role' must be system, user"},
      {R"({"messages": [{"role": "user"}]})", "'content' must be a string"},
      {R"({"messages": [{"role": "user", "content": "x", "extra": 1}]})", "unknown field 'extra'"},
      {R"({"messages": ["hi"]})", "messages[0]: expected a JSON object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", "unknown field 'echo'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1,
           "max_completion_tokens": 1})",
       "not both"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})",
       "'logprobs' must be true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
       "'top_logprobs' needs 'logprobs': true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       "'top_logprobs' must be in [0, 20]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {}})",
       "'stream_options' is only allowed with 'stream': true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": true,
           "stream_options": {"include_usage": 1}})",
       "stream_options: 'include_usage' must be true or false"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": true,
           "stream_options": {"extra": true}})",
       "stream_options: unknown field 'extra'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": true, "stream_options": 1})",
       "stream_options: expected a JSON object"},
  };
  for (const auto& [body, expected] : cases)
    EXPECT_NE(error_of(body, true).find(expected), std::string::npos)
        << body << " gave: " << error_of(body, true);
}

}  // namespace
}  // namespace gattn
