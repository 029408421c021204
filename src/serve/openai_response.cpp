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

json chat_token(const Tokenizer& tokenizer, uint32_t id, float logprob) {
  const std::string text = tokenizer.decode(std::span(&id, 1));
  json bytes = json::array();
  for (const char c : text) bytes.push_back(int(static_cast<unsigned char>(c)));
  return {{"token", text}, {"logprob", logprob}, {"bytes", bytes}};
}

// The scored tokens whose text is the content: an end token is not.
std::span<const TokenLogprob> content_logprobs(const JobOutcome& outcome) {
  std::span<const TokenLogprob> all(outcome.logprobs);
  return outcome.end_token && !all.empty() ? all.first(all.size() - 1) : all;
}
}  // namespace

json chat_logprobs(const Tokenizer& tokenizer, std::span<const TokenLogprob> tokens) {
  json content = json::array();
  for (const TokenLogprob& t : tokens) {
    json entry = chat_token(tokenizer, t.token, t.logprob.value_or(0.0f));
    entry["top_logprobs"] = json::array();
    for (const auto& [id, lp] : t.top)
      entry["top_logprobs"].push_back(chat_token(tokenizer, id, lp));
    content.push_back(std::move(entry));
  }
  return {{"content", content}};
}

json completion_response(const ResponseHeader& h, const Tokenizer& tokenizer,
                         const OpenAiRequest& request, const std::string& prompt_text,
                         int prompt_tokens, const JobOutcome& outcome) {
  const int completion_tokens = int(outcome.tokens.size());
  if (h.chat) {
    json r = base(h, "chat.completion");
    const json logprobs =
        request.logprobs >= 0 ? chat_logprobs(tokenizer, content_logprobs(outcome)) : json(nullptr);
    json message = {{"role", "assistant"}, {"content", outcome.text}};
    if (h.split_reasoning) {
      ReasoningSplitter splitter(h.reasoning_open);
      ReasoningSplitter::Parts parts = splitter.feed(outcome.text);
      const ReasoningSplitter::Parts rest = splitter.finish();
      parts.reasoning += rest.reasoning;
      parts.content += rest.content;
      message["content"] = parts.content;
      if (!parts.reasoning.empty()) message["reasoning_content"] = parts.reasoning;
    }
    r["choices"] = json::array({{{"index", 0},
                                 {"message", message},
                                 {"logprobs", logprobs},
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

EventStream::EventStream(ResponseHeader header, const Tokenizer& tokenizer,
                         const OpenAiRequest& request, int prompt_tokens)
    : h_(std::move(header)),
      tokenizer_(tokenizer),
      include_usage_(request.include_usage),
      prompt_tokens_(prompt_tokens) {
  if (h_.chat && h_.split_reasoning) reasoning_.emplace(h_.reasoning_open);
}

ReasoningSplitter::Parts EventStream::split(std::string_view text) {
  if (!reasoning_) return {.reasoning = {}, .content = std::string(text)};
  return reasoning_->feed(text);
}

std::string EventStream::progress(const JobProgress& p, bool finished) {
  const bool role = first_ && h_.chat && !finished;  // a chat stream says its role at once
  const ReasoningSplitter::Parts parts = split(p.text);
  if (parts.content.empty() && parts.reasoning.empty() && p.logprobs.empty() && !role) return "";
  return sse_event(chunk(parts, p.logprobs, ""));
}

std::string EventStream::end(const JobOutcome& outcome) {
  std::string events;
  if (outcome.error_status) {
    events = sse_event(error_body(outcome.error, error_type(outcome.error_status)));
  } else {
    if (reasoning_) {  // what the splitter held back
      const ReasoningSplitter::Parts rest = reasoning_->finish();
      if (!rest.content.empty() || !rest.reasoning.empty()) events = sse_event(chunk(rest, {}, ""));
    }
    events += sse_event(chunk({}, {}, outcome.finish_reason));
    if (include_usage_) {
      json last = base(h_, h_.chat ? "chat.completion.chunk" : "text_completion");
      last["choices"] = json::array();
      last["usage"] = usage(prompt_tokens_, int(outcome.tokens.size()));
      events += sse_event(last);
    }
  }
  return events + "data: [DONE]\n\n";
}

// One chunk: new text (a chat's reasoning and answer apart; first in a chat, the role);
// finish_reason ends the stream.
json EventStream::chunk(const ReasoningSplitter::Parts& parts,
                        std::span<const TokenLogprob> logprobs, const std::string& finish_reason) {
  const json reason = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  const std::string& text = parts.content;
  json r;
  if (h_.chat) {
    json delta = json::object();
    if (first_) delta["role"] = "assistant";
    if (!parts.reasoning.empty()) delta["reasoning_content"] = parts.reasoning;
    if (!text.empty() || (first_ && finish_reason.empty() && parts.reasoning.empty()))
      delta["content"] = text;
    r = base(h_, "chat.completion.chunk");
    r["choices"] = json::array(
        {{{"index", 0},
          {"delta", delta},
          {"logprobs", logprobs.empty() ? json(nullptr) : chat_logprobs(tokenizer_, logprobs)},
          {"finish_reason", reason}}});
  } else {
    r = base(h_, "text_completion");
    r["choices"] = json::array(
        {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", reason}}});
  }
  if (include_usage_) r["usage"] = nullptr;  // OpenAI: every chunk but the last says null
  first_ = false;
  return r;
}

json error_body(const std::string& message, const std::string& type) {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

std::string error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 408) return "timeout_error";
  if (status == 503) return "server_unavailable";
  return status < 500 ? "invalid_request_error" : "server_error";
}

std::string json_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& j) { return "data: " + json_text(j) + "\n\n"; }

}  // namespace gattn
