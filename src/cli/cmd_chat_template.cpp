// gattn chat-template: the prompt a chat template makes of a conversation, as text or ids: to see
// which template a checkpoint gets and what it does with a request.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "infer/chat_format.h"
#include "io/file.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
struct ChatTemplateFlags {
  std::string checkpoint, tokenizer, chat_template = "auto", conversation;
  bool ids = false;
};

// A conversation file: a JSON array of messages, or an object with "messages" and
// "chat_template_kwargs" as in a chat request.
std::pair<nlohmann::ordered_json, nlohmann::ordered_json> read_conversation(
    const std::string& path) {
  const std::string text = read_text_file(path);
  parse_json_text(text, path);  // bad JSON or nesting too deep: an error naming the file
  const auto j = nlohmann::ordered_json::parse(text);
  if (j.is_array()) return {j, nlohmann::ordered_json::object()};
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array())
    fail(path, ": expected an array of messages or an object with 'messages'");
  const nlohmann::ordered_json kwargs =
      j.value("chat_template_kwargs", nlohmann::ordered_json::object());
  if (!kwargs.is_object()) fail(path, ": 'chat_template_kwargs' must be an object");
  return {j["messages"], kwargs};
}
}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "chat-template", "Show the prompt a chat template makes of a conversation (text or ids)");
  static ChatTemplateFlags f;
  cmd->add_option("--checkpoint", f.checkpoint, "the model folder (its chat template, tokenizer)")
      ->required();
  cmd->add_option("--tokenizer", f.tokenizer, "tokenizer.json (default: the checkpoint's)");
  cmd->add_option("--chat-template", f.chat_template,
                  "auto (the checkpoint's, else a built-in one), chatml, qwen3, qwen3_5 or a "
                  ".jinja file")
      ->capture_default_str();
  cmd->add_option("--conversation", f.conversation,
                  "JSON: an array of messages, or {\"messages\": [...], \"chat_template_kwargs\": "
                  "{...}}")
      ->required();
  cmd->add_flag("--ids", f.ids, "print the token ids instead of the text");
  cmd->callback([] {
    const std::string& folder = f.checkpoint;
    const Tokenizer tokenizer = load_model_tokenizer(f.tokenizer, folder);
    const ChatFormat format = ChatFormat::choose(f.chat_template, folder, tokenizer, stderr_log());
    const auto [messages, kwargs] = read_conversation(f.conversation);
    const ChatFormat::Prompt p = format.render(messages, kwargs);
    if (!f.ids) {
      std::fwrite(p.text.data(), 1, p.text.size(), stdout);
      return;
    }
    for (size_t i = 0; i < p.ids.size(); ++i) std::printf(i ? " %u" : "%u", p.ids[i]);
    std::printf("\n");
  });
}

}  // namespace gattn
