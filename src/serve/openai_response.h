// The bodies of OpenAI-compatible responses: completions, chat completions, their streamed
// chunks (server-sent events), logprobs and errors.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "serve/openai_request.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

// What every response and chunk of one request repeats.
struct ResponseHeader {
  std::string id;  // cmpl-N or chatcmpl-N
  int64_t created = 0;
  std::string model;
  bool chat = false;
};

// The whole response to a request that was not streamed. prompt_text: the prompt as the
// client gave it (echo).
nlohmann::json completion_response(const ResponseHeader& h, const Tokenizer& tokenizer,
                                   const OpenAiRequest& request, const std::string& prompt_text,
                                   int prompt_tokens, const JobOutcome& outcome);
// One streamed chunk: new text (and, first in a chat, the role); finish_reason ends the stream.
nlohmann::json completion_chunk(const ResponseHeader& h, std::string_view text, bool first,
                                const std::string& finish_reason = "");
// {"error": {"message", "type", "code"}}.
nlohmann::json error_body(const std::string& message, const std::string& type);
// An error's type for its HTTP status (invalid_request_error for 4xx).
std::string error_type(int status);
// JSON text, invalid UTF-8 (a token that is part of a character) replaced by U+FFFD.
std::string json_text(const nlohmann::json& j);
// One server-sent event: "data: <json>\n\n".
std::string sse_event(const nlohmann::json& j);

}  // namespace gattn
