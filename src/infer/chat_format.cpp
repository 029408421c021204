#include "infer/chat_format.h"

#include <algorithm>
#include <filesystem>

#include "infer/builtin_chat_templates.h"
#include "infer/chat_template.h"
#include "io/file.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

std::optional<json> read_json_beside(const std::string& folder, const char* name, LogSink& log) {
  const fs::path path = fs::path(folder) / name;
  if (folder.empty() || !fs::is_regular_file(path)) return std::nullopt;
  try {
    return parse_json_text(read_text_file(path.string()), path.string());
  } catch (const Error& e) {
    log.note("chat: ", e.what(), " (ignored)");
    return std::nullopt;
  }
}

// The checkpoint's own template: chat_template.jinja, else tokenizer_config.json's chat_template
// (a string, or a list of named ones of which "default" is taken). Its text and where it is.
std::optional<std::pair<std::string, std::string>> checkpoint_template(const std::string& folder,
                                                                       LogSink& log) {
  const fs::path file = fs::path(folder) / "chat_template.jinja";
  if (!folder.empty() && fs::is_regular_file(file))
    return std::pair(read_text_file(file.string()), file.string());
  const auto config = read_json_beside(folder, "tokenizer_config.json", log);
  if (!config || !config->is_object() || !config->contains("chat_template")) return std::nullopt;
  const std::string where =
      (fs::path(folder) / "tokenizer_config.json").string() + ": chat_template";
  const json& t = (*config)["chat_template"];
  if (t.is_string()) return std::pair(t.get<std::string>(), where);
  if (t.is_array())
    for (const json& named : t)
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string())
        return std::pair(named["template"].get<std::string>(), where + "[default]");
  log.note("chat: ", where, " is neither a string nor a list with a 'default' template (ignored)");
  return std::nullopt;
}

// The built-in template for a checkpoint: Qwen3.5's for a qwen3_5 model_type, Qwen3's for
// another tokenizer with <think>, else plain ChatML.
std::string builtin_for(const std::string& folder, const Tokenizer& tokenizer, LogSink& log) {
  if (!tokenizer.token_to_id(kThinkOpen) || !tokenizer.token_to_id(kThinkClose)) return "chatml";
  const auto config = read_json_beside(folder, "config.json", log);
  const std::string type = config && config->is_object() ? config->value("model_type", "") : "";
  return type.rfind("qwen3_5", 0) == 0 ? "qwen3_5" : "qwen3";
}

jinja::Template builtin(const std::string& name) {
  return jinja::Template(*builtin_chat_template(name), "built-in chat template '" + name + "'");
}

// A special token named in tokenizer_config.json: a string or {"content": string}.
std::optional<std::string> special_token(const json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const json& t = config[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string())
    return t["content"].get<std::string>();
  return std::nullopt;
}

// Whether bytes [begin, end) of the rendered text are all the template's own.
bool template_text(const jinja::Text& t, size_t begin, size_t end) {
  const auto it = std::upper_bound(t.data.begin(), t.data.end(), begin,
                                   [](size_t x, const jinja::DataSpan& d) { return x < d.end; });
  return it == t.data.end() || it->begin >= end;
}
}  // namespace

ChatFormat ChatFormat::choose(const std::string& choice, const std::string& folder,
                              const Tokenizer& tokenizer, LogSink& log) {
  if (builtin_chat_template(choice)) {
    log.info("chat: built-in template '", choice, "' (--chat-template)");
    return ChatFormat(builtin(choice), "built-in '" + choice + "'", tokenizer, folder);
  }
  if (choice != "auto") {
    ChatFormat f(jinja::Template(read_text_file(choice), choice), choice, tokenizer, folder);
    log.info("chat: template ", choice, " (--chat-template)");
    return f;
  }
  const std::string fallback = builtin_for(folder, tokenizer, log);
  if (const auto own = checkpoint_template(folder, log)) {
    try {
      ChatFormat f(jinja::Template(own->first, own->second), own->second, tokenizer, folder);
      log.info("chat: the checkpoint's template, ", own->second);
      return f;
    } catch (const Error& e) {
      log.note("chat: the checkpoint's template cannot run here (", e.what(),
               "); using the built-in '", fallback, "' instead");
    }
  } else {
    log.info("chat: the checkpoint has no chat template; using the built-in '", fallback, "'");
  }
  return ChatFormat(builtin(fallback), "built-in '" + fallback + "'", tokenizer, folder);
}

ChatFormat::ChatFormat(jinja::Template tmpl, std::string description, const Tokenizer& tokenizer,
                       const std::string& folder)
    : template_(std::move(tmpl)), description_(std::move(description)), tokenizer_(&tokenizer) {
  has_reasoning_ = tokenizer.token_to_id(kThinkOpen) && tokenizer.token_to_id(kThinkClose);
  const auto add_end = [&](const std::string& token) {
    const auto id = tokenizer.token_to_id(token);
    if (id && std::find(end_ids_.begin(), end_ids_.end(), *id) == end_ids_.end())
      end_ids_.push_back(*id);
  };
  add_end(kEndOfText);
  add_end("<|im_end|>");
  if (const auto config = read_json_beside(folder, "tokenizer_config.json", discard_log())) {
    for (const char* key : {"bos_token", "eos_token", "pad_token", "unk_token"})
      if (const auto token = special_token(*config, key))
        special_tokens_.emplace_back(key, jinja::Value::literal(*token));
    if (const auto eos = special_token(*config, "eos_token")) add_end(*eos);
  }
}

ChatFormat::Prompt ChatFormat::render(const json& messages, const json& kwargs) const {
  return render_any(messages, kwargs);
}

ChatFormat::Prompt ChatFormat::render(const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& kwargs) const {
  return render_any(messages, kwargs);
}

template <typename Json>
ChatFormat::Prompt ChatFormat::render_any(const Json& messages, const Json& kwargs) const {
  if (description_.rfind("built-in", 0) == 0) check_chatml_tokens(*tokenizer_);
  jinja::Variables vars = special_tokens_;
  vars.emplace_back("messages", jinja::Value::from_json(messages));
  vars.emplace_back("add_generation_prompt", jinja::Value::boolean(true));
  if (kwargs.is_object())
    for (const auto& [k, v] : kwargs.items()) vars.emplace_back(k, jinja::Value::from_json(v));
  const jinja::Text text = template_.render(vars);
  Prompt p;
  p.ids = tokenizer_->encode_where(text.s,
                                   [&](size_t b, size_t e) { return template_text(text, b, e); });
  size_t end = text.s.size();
  while (end > 0 && (text.s[end - 1] == '\n' || text.s[end - 1] == ' ')) --end;
  p.opens_reasoning = has_reasoning_ && end >= kThinkOpen.size() &&
                      text.s.compare(end - kThinkOpen.size(), kThinkOpen.size(), kThinkOpen) == 0 &&
                      template_text(text, end - kThinkOpen.size(), end);
  p.text = text.s;
  return p;
}

ReasoningSplitter::ReasoningSplitter(bool starts_inside)
    : mode_(starts_inside ? Mode::reasoning : Mode::start) {}

ReasoningSplitter::Parts ReasoningSplitter::feed(std::string_view text) {
  pending_ += text;
  return drain(false);
}

ReasoningSplitter::Parts ReasoningSplitter::finish() { return drain(true); }

namespace {
// How many bytes at the end of `s` may be the start of `marker`.
size_t partial_marker(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}
size_t leading_newlines(std::string_view s) {
  return std::min(s.find_first_not_of('\n'), s.size());
}
}  // namespace

ReasoningSplitter::Parts ReasoningSplitter::drain(bool final) {
  Parts out;
  for (;;) {
    if (mode_ == Mode::start) {
      const size_t skip = std::min(pending_.find_first_not_of(" \t\r\n"), pending_.size());
      const std::string_view rest = std::string_view(pending_).substr(skip);
      if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
        pending_.erase(0, skip + kThinkOpen.size());
        mode_ = Mode::reasoning;
        continue;
      }
      if (!final && kThinkOpen.substr(0, rest.size()) == rest) return out;  // may still be <think>
      mode_ = Mode::content;
      content_started_ = true;  // no think block: the answer as it is
      continue;
    }
    if (mode_ == Mode::reasoning) {
      if (!reasoning_started_) {
        pending_.erase(0, leading_newlines(pending_));
        if (pending_.empty() && !final) return out;
        reasoning_started_ = true;
      }
      const size_t close = pending_.find(kThinkClose);
      if (close != std::string::npos) {
        std::string_view thought = std::string_view(pending_).substr(0, close);
        while (!thought.empty() && thought.back() == '\n') thought.remove_suffix(1);
        out.reasoning += thought;
        pending_.erase(0, close + kThinkClose.size());
        mode_ = Mode::content;
        continue;
      }
      size_t keep = final ? 0 : partial_marker(pending_, kThinkClose);
      if (!final)
        while (keep < pending_.size() && pending_[pending_.size() - keep - 1] == '\n') ++keep;
      out.reasoning += pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return out;
    }
    if (!content_started_) {
      pending_.erase(0, leading_newlines(pending_));
      if (pending_.empty() && !final) return out;
      content_started_ = true;
    }
    out.content += pending_;
    pending_.clear();
    return out;
  }
}

}  // namespace gattn
