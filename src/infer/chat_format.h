// How a chat becomes a prompt, and a reply's reasoning is told from its answer: a chat template
// (the checkpoint's own chat_template where it has one gattn's template engine runs, else a
// built-in one: builtin_chat_templates.h) rendered to text and tokenized so that only the
// template's own text can become added tokens (a message writing "<|im_end|>" stays text).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "infer/jinja/template.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

namespace gattn {

class ChatFormat {
 public:
  // `choice`: "auto" (the checkpoint's template: tokenizer_config.json's chat_template or
  // chat_template.jinja in `folder`; else a built-in one by config.json's model_type and whether
  // the tokenizer has <think>), a built-in's name, or a .jinja file. Says on `log` which one it
  // took and why. An Error naming the file when a chosen template cannot be read or parsed
  // (auto falls back to a built-in one instead, and says so).
  static ChatFormat choose(const std::string& choice, const std::string& folder,
                           const Tokenizer& tokenizer, LogSink& log);
  // `folder`: the checkpoint's, whose tokenizer_config.json names bos_token, eos_token, ... ("":
  // none).
  ChatFormat(jinja::Template tmpl, std::string description, const Tokenizer& tokenizer,
             const std::string& folder);

  // The prompt's text and ids for `messages` (a JSON array of {role, content, ...}) with the
  // template's extra variables (`kwargs`: enable_thinking, ...). An Error when the template
  // refuses the messages.
  struct Prompt {
    std::string text;
    std::vector<uint32_t> ids;
    bool opens_reasoning = false;  // the prompt ends inside an open <think> block
  };
  Prompt render(const nlohmann::json& messages, const nlohmann::json& kwargs) const;
  // The same, keeping the order of the objects' keys (what tojson of a tool's schema writes).
  Prompt render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& kwargs) const;

  const std::string& description() const { return description_; }
  // Whether replies may hold a <think> block (the tokenizer has <think> and </think>).
  bool has_reasoning() const { return has_reasoning_; }
  // The ids that end a reply, those of them the tokenizer has: <|endoftext|>, <|im_end|> and the
  // checkpoint's eos_token.
  const std::vector<uint32_t>& end_ids() const { return end_ids_; }

 private:
  template <typename Json>
  Prompt render_any(const Json& messages, const Json& kwargs) const;

  jinja::Template template_;
  std::string description_;
  const Tokenizer* tokenizer_;
  jinja::Variables special_tokens_;  // bos_token, eos_token, ... from tokenizer_config.json
  std::vector<uint32_t> end_ids_;
  bool has_reasoning_ = false;
};

// Splits a reply into its reasoning (inside <think> ... </think>) and its answer, as text comes:
// what is held back is only what may still turn out to be part of a marker or of the newlines
// around one.
class ReasoningSplitter {
 public:
  // starts_inside: the prompt opened the <think> block (ChatFormat::Prompt::opens_reasoning).
  explicit ReasoningSplitter(bool starts_inside);
  struct Parts {
    std::string reasoning, content;
  };
  // The parts of `text` that are settled now.
  Parts feed(std::string_view text);
  // What was held back, at the end of the reply.
  Parts finish();

 private:
  enum class Mode { start, reasoning, content };
  Parts drain(bool final);
  Mode mode_;
  bool reasoning_started_ = false, content_started_ = false;
  std::string pending_;
};

}  // namespace gattn
