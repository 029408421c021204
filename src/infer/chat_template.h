// A chat message as requests carry it, and the ChatML tokens gattn's built-in chat templates
// need. How messages become a prompt: infer/chat_format.h.
#pragma once
#include <optional>
#include <string>

#include "tokenizer/tokenizer.h"

namespace gattn {

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
  std::optional<std::string> reasoning_content = {};  // an assistant turn's reasoning, if given
};

// An error if the tokenizer lacks <|im_start|> or <|im_end|>.
void check_chatml_tokens(const Tokenizer& tokenizer);

}  // namespace gattn
