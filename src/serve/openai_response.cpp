#include "serve/openai_response.h"

namespace gattn {

namespace {
using nlohmann::json;

json usage(int prompt_tokens, int completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

// The legacy completions logprobs object: tokens, token_logprobs, top_logprobs, text_offset.
json logprobs_object(const Tokenizer& tokenizer, const JobOutcome& outcome, bool echo,
                     size_t offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  const auto add = [&](const TokenLogprob& t) {
    const std::string text = tokenizer.decode(std::span(&t.token, 1));
    tokens.push_back(text);
    offsets.push_back(offset);
    offset += text.size();
    if (!t.logprob) {
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
      return;
    }
    token_logprobs.push_back(*t.logprob);
    json alternatives = json::object();
    for (const auto& [id, lp] : t.top) alternatives[tokenizer.decode(std::span(&id, 1))] = lp;
    top.push_back(alternatives);
  };
  if (echo)
    for (const TokenLogprob& t : outcome.prompt_logprobs) add(t);
  for (const TokenLogprob& t : outcome.logprobs) add(t);
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

json base(const ResponseHeader& h, const char* object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}
}  // namespace

json completion_response(const ResponseHeader& h, const Tokenizer& tokenizer,
                         const OpenAiRequest& request, const std::string& prompt_text,
                         int prompt_tokens, const JobOutcome& outcome) {
  const int completion_tokens = int(outcome.tokens.size());
  if (h.chat) {
    json r = base(h, "chat.completion");
    r["choices"] = json::array({{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", outcome.text}}},
                                 {"finish_reason", outcome.finish_reason}}});
    r["usage"] = usage(prompt_tokens, completion_tokens);
    return r;
  }
  json r = base(h, "text_completion");
  json choice = {{"index", 0},
                 {"text", request.echo ? prompt_text + outcome.text : outcome.text},
                 {"logprobs", nullptr},
                 {"finish_reason", outcome.finish_reason}};
  if (request.logprobs >= 0)
    choice["logprobs"] =
        logprobs_object(tokenizer, outcome, request.echo, request.echo ? 0 : prompt_text.size());
  r["choices"] = json::array({choice});
  r["usage"] = usage(prompt_tokens, completion_tokens);
  return r;
}

json completion_chunk(const ResponseHeader& h, std::string_view text, bool first,
                      const std::string& finish_reason) {
  const json reason = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  if (h.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && finish_reason.empty())) delta["content"] = text;
    json r = base(h, "chat.completion.chunk");
    r["choices"] = json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", reason}}});
    return r;
  }
  json r = base(h, "text_completion");
  r["choices"] = json::array(
      {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", reason}}});
  return r;
}

json error_body(const std::string& message, const std::string& type) {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

std::string error_type(int status) {
  if (status == 408) return "timeout_error";
  if (status == 503) return "server_unavailable";
  return status < 500 ? "invalid_request_error" : "server_error";
}

std::string json_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& j) { return "data: " + json_text(j) + "\n\n"; }

}  // namespace gattn
