#include "serve/openai_request.h"

#include <algorithm>
#include <array>

#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
using nlohmann::json;

// Reads the fields of one request object, each with its type checked; what() errors name them.
class Fields {
 public:
  Fields(const json& object, std::string where) : o_(object), where_(std::move(where)) {
    if (!o_.is_object()) fail(where_, ": expected a JSON object, got ", json_summary(o_));
  }
  // Every field must be one of `known`.
  void only(std::initializer_list<std::string_view> known) const {
    for (const auto& [key, value] : o_.items())
      if (std::find(known.begin(), known.end(), key) == known.end())
        fail(where_, ": unknown field '", key, "'");
  }
  // A field present and not null.
  const json* get(const char* key) const {
    const auto it = o_.find(key);
    return it == o_.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer())
      fail(where_, ": '", key, "' must be an integer, got ", json_summary(*v));
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
      fail(where_, ": '", key, "' is too large");
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi) fail(where_, ": '", key, "' must be in [", lo, ", ", hi, "], got ", x);
    return x;
  }
  std::optional<double> number(const char* key, double lo, double hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(where_, ": '", key, "' must be a number, got ", json_summary(*v));
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
      fail(where_, ": '", key, "' must be in [", lo, ", ", hi, "], got ", x);
    return x;
  }
  bool boolean(const char* key, bool fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_boolean())
      fail(where_, ": '", key, "' must be true or false, got ", json_summary(*v));
    return v->get<bool>();
  }
  std::optional<std::string> string(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(where_, ": '", key, "' must be a string, got ", json_summary(*v));
    return v->get<std::string>();
  }
  const std::string& where() const { return where_; }

 private:
  const json& o_;
  std::string where_;
};

std::vector<std::string> stop_strings(const Fields& f) {
  const json* v = f.get("stop");
  if (!v) return {};
  std::vector<std::string> stop;
  if (v->is_string()) {
    stop.push_back(v->get<std::string>());
  } else if (v->is_array() && v->size() <= size_t(kMaxStopStrings)) {
    for (const json& s : *v) {
      if (!s.is_string()) fail(f.where(), ": 'stop' must hold strings, got ", json_summary(s));
      stop.push_back(s.get<std::string>());
    }
  } else {
    fail(f.where(), ": 'stop' must be a string or an array of at most ", kMaxStopStrings,
         " strings, got ", json_summary(*v));
  }
  for (const std::string& s : stop)
    if (s.empty()) fail(f.where(), ": 'stop' strings must not be empty");
  return stop;
}

// The fields both endpoints share.
void common_fields(const Fields& f, OpenAiRequest& r, const char* max_tokens_key) {
  r.model = f.string("model").value_or("");
  if (auto n = f.integer(max_tokens_key, 0, INT32_MAX)) r.max_tokens = int(*n);
  f.integer("n", 1, 1);  // one choice per request
  r.sampling.temperature = f.number("temperature", 0, 100).value_or(1.0);
  r.sampling.top_p = f.number("top_p", 0, 1).value_or(1.0);
  if (r.sampling.top_p == 0) fail(f.where(), ": 'top_p' must be above 0");
  r.sampling.top_k = int(f.integer("top_k", 0, INT32_MAX).value_or(0));
  r.sampling.min_p = f.number("min_p", 0, 1).value_or(0.0);
  r.sampling.repeat_penalty = f.number("repetition_penalty", 1e-6, 1e6).value_or(1.0);
  for (const char* penalty : {"presence_penalty", "frequency_penalty"})
    f.number(penalty, 0, 0);  // only 0 (off): the engine has no such penalty
  if (auto seed = f.integer("seed", INT64_MIN, INT64_MAX)) r.seed = uint64_t(*seed);
  r.stop = stop_strings(f);
  r.ignore_eos = f.boolean("ignore_eos", false);
  r.stream = f.boolean("stream", false);
  if (const json* options = f.get("stream_options")) {
    if (!r.stream) fail(f.where(), ": 'stream_options' is only allowed with 'stream': true");
    const Fields o(*options, f.where() + ": stream_options");
    o.only({"include_usage"});
    r.include_usage = o.boolean("include_usage", false);
  }
  f.string("user");  // accepted, unused
}

// A prompt as text, as token ids, or as an array holding exactly one of these.
void completion_prompt(const json& v, const std::string& where, OpenAiRequest& r) {
  const auto ids = [&](const json& array) {
    for (const json& id : array) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
        fail(where, ": 'prompt' token ids must be non-negative integers, got ", json_summary(id));
      r.prompt_ids.push_back(uint32_t(id.get<uint64_t>()));
    }
    if (r.prompt_ids.empty()) fail(where, ": 'prompt' has no tokens");
  };
  if (v.is_string()) {
    r.prompt = v.get<std::string>();
  } else if (v.is_array() && !v.empty() && v[0].is_number()) {
    ids(v);
  } else if (v.is_array() && v.size() == 1 && (v[0].is_string() || v[0].is_array())) {
    completion_prompt(v[0], where, r);
  } else if (v.is_array() && v.size() > 1 && (v[0].is_string() || v[0].is_array())) {
    fail(where, ": one prompt per request is supported, got ", v.size());
  } else {
    fail(where, ": 'prompt' must be a string, token ids, or an array of one of these; got ",
         json_summary(v));
  }
}
}  // namespace

OpenAiRequest parse_completion_request(std::string_view body) {
  const std::string where = "/v1/completions";
  const json j = parse_json_text(body, where + " request body");
  const Fields f(j, where);
  f.only({"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p",
          "repetition_penalty", "presence_penalty", "frequency_penalty", "seed", "stop",
          "ignore_eos", "stream", "stream_options", "logprobs", "echo", "n", "user"});
  OpenAiRequest r;
  const json* prompt = f.get("prompt");
  if (!prompt) fail(where, ": 'prompt' is required");
  completion_prompt(*prompt, where, r);
  common_fields(f, r, "max_tokens");
  r.echo = f.boolean("echo", false);
  r.logprobs = int(f.integer("logprobs", 0, kMaxLogprobs).value_or(-1));
  if (r.stream && (r.echo || r.logprobs >= 0))
    fail(where, ": 'echo' and 'logprobs' are not supported with 'stream'");
  return r;
}

OpenAiRequest parse_chat_request(std::string_view body) {
  const std::string where = "/v1/chat/completions";
  const json j = parse_json_text(body, where + " request body");
  const Fields f(j, where);
  f.only({"model",
          "messages",
          "max_tokens",
          "max_completion_tokens",
          "temperature",
          "top_p",
          "top_k",
          "min_p",
          "repetition_penalty",
          "presence_penalty",
          "frequency_penalty",
          "seed",
          "stop",
          "stream",
          "stream_options",
          "logprobs",
          "top_logprobs",
          "n",
          "user",
          "chat_template_kwargs",
          "ignore_eos"});
  OpenAiRequest r{.chat = true};
  const json* messages = f.get("messages");
  if (!messages || !messages->is_array() || messages->empty())
    fail(where, ": 'messages' must be a non-empty array");
  for (size_t i = 0; i < messages->size(); ++i) {
    const Fields m((*messages)[i], cat(where, ": messages[", i, "]"));
    m.only({"role", "content", "name", "reasoning_content"});
    const std::string role = m.string("role").value_or("");
    if (role != "system" && role != "user" && role != "assistant")
      fail(m.where(), ": 'role' must be system, user or assistant, got '", role, "'");
    const auto content = m.string("content");
    if (!content) fail(m.where(), ": 'content' must be a string");
    m.string("name");
    r.messages.push_back(
        {.role = role, .content = *content, .reasoning_content = m.string("reasoning_content")});
  }
  if (const json* kwargs = f.get("chat_template_kwargs")) {
    if (!kwargs->is_object()) fail(where, ": 'chat_template_kwargs' must be an object");
    for (const auto& [key, value] : kwargs->items())
      if (key == "messages" || key == "add_generation_prompt")
        fail(where, ": 'chat_template_kwargs' cannot set '", key, "'");
    r.chat_template_kwargs = *kwargs;
  }
  const bool both = f.get("max_tokens") && f.get("max_completion_tokens");
  if (both) fail(where, ": give 'max_tokens' or 'max_completion_tokens', not both");
  common_fields(f, r, f.get("max_tokens") ? "max_tokens" : "max_completion_tokens");
  const auto top = f.integer("top_logprobs", 0, kMaxLogprobs);
  if (f.boolean("logprobs", false)) {
    r.logprobs = int(top.value_or(0));
  } else if (top) {
    fail(where, ": 'top_logprobs' needs 'logprobs': true");
  }
  return r;
}

}  // namespace gattn
