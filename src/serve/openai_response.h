// The bodies of OpenAI-compatible responses: completions, chat completions, their streamed
// chunks (server-sent events), logprobs and errors.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "infer/chat_format.h"
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
  // Chat: the reply's <think> block goes to reasoning_content (the prompt may have opened it).
  bool split_reasoning = false, reasoning_open = false;
};

// The whole response to a request that was not streamed. prompt_text: the prompt as the
// client gave it (echo).
nlohmann::json completion_response(const ResponseHeader& h, const Tokenizer& tokenizer,
                                   const OpenAiRequest& request, const std::string& prompt_text,
                                   int prompt_tokens, const JobOutcome& outcome);
// The events of one streamed response: chunks of new text (first in a chat, the role; with chat
// logprobs, the scores of the chunk's tokens), then the end: the last chunk or an error event,
// the usage chunk (stream_options.include_usage), "data: [DONE]".
class EventStream {
 public:
  EventStream(ResponseHeader header, const Tokenizer& tokenizer, const OpenAiRequest& request,
              int prompt_tokens);
  // The events for what the job produced since the last call; "" when there is nothing to say.
  std::string progress(const JobProgress& progress, bool finished);
  // The events that end the stream, for the job's outcome (an error or its finish).
  std::string end(const JobOutcome& outcome);

 private:
  nlohmann::json chunk(const ReasoningSplitter::Parts& text, std::span<const TokenLogprob> logprobs,
                       const std::string& finish_reason);
  ReasoningSplitter::Parts split(std::string_view text);

  const ResponseHeader h_;
  const Tokenizer& tokenizer_;
  const bool include_usage_;
  const int prompt_tokens_;
  bool first_ = true;
  std::optional<ReasoningSplitter> reasoning_;
};

// Chat logprobs as OpenAI gives them: {"content": [{"token", "logprob", "bytes",
// "top_logprobs": [{"token", "logprob", "bytes"}...]}...]}. "bytes" are the token's exact UTF-8
// bytes: "token" loses those of a character split across tokens (U+FFFD in JSON).
nlohmann::json chat_logprobs(const Tokenizer& tokenizer, std::span<const TokenLogprob> tokens);
// {"error": {"message", "type", "code"}}.
nlohmann::json error_body(const std::string& message, const std::string& type);
// An error's type for its HTTP status (invalid_request_error for 4xx).
std::string error_type(int status);
// JSON text, invalid UTF-8 (a token that is part of a character) replaced by U+FFFD.
std::string json_text(const nlohmann::json& j);
// One server-sent event: "data: <json>\n\n".
std::string sse_event(const nlohmann::json& j);

}  // namespace gattn
