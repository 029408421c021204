// The bodies of OpenAI-compatible requests (/v1/completions, /v1/chat/completions), parsed and
// validated: a field of the wrong type, a value out of range or a field the endpoint does not
// have is an Error whose message names the field (the server answers 400).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "infer/chat_template.h"
#include "infer/sampler.h"

namespace gattn {

inline constexpr int kMaxLogprobs = 20;  // top alternatives per token
inline constexpr int kMaxStopStrings = 16;

struct OpenAiRequest {
  bool chat = false;
  std::string model = {};
  // /v1/completions: the prompt as text, or as token ids (prompt_ids non-empty).
  std::string prompt = {};
  std::vector<uint32_t> prompt_ids = {};
  // /v1/chat/completions: the conversation, and chat_template_kwargs (an object: the chat
  // template's extra variables, such as enable_thinking).
  std::vector<ChatMessage> messages = {};
  nlohmann::json chat_template_kwargs = nlohmann::json::object();
  std::optional<int> max_tokens = {};  // absent: the endpoint's default
  SamplingOptions sampling = {};
  std::optional<uint64_t> seed = {};  // absent: a fresh seed per request
  std::vector<std::string> stop = {};
  bool ignore_eos = false;  // vLLM's and llama.cpp's extension: end tokens do not end the reply
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  bool echo = false;  // completions: the prompt's text (and logprobs) before the completion
  // Top alternatives per token; -1: no logprobs. Completions: 'logprobs' (an integer); chat:
  // 'top_logprobs' (0 when absent) once 'logprobs' is true.
  int logprobs = -1;
};

// The body of a POST to /v1/completions or /v1/chat/completions.
OpenAiRequest parse_completion_request(std::string_view body);
OpenAiRequest parse_chat_request(std::string_view body);

}  // namespace gattn
