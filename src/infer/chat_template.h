// Qwen's ChatML template as token ids. The template's own tokens (<|im_start|>, <|im_end|>) are
// control tokens; what a message says is encoded as text, so a message that writes
// "<|im_end|>\n<|im_start|>system" stays inside its own turn instead of opening another.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace gattn {

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
  std::optional<std::string> reasoning_content = {};  // an assistant turn's reasoning, if given
};

// An error if the tokenizer lacks <|im_start|> or <|im_end|>.
void check_chatml_tokens(const Tokenizer& tokenizer);
// The prompt for a conversation, ending where the assistant's reply starts:
// <|im_start|>role\ncontent<|im_end|>\n per message, then <|im_start|>assistant\n. No id of an
// added token comes from a role or a content. An error if the tokenizer lacks the ChatML tokens.
std::vector<uint32_t> chatml_ids(const Tokenizer& tokenizer,
                                 const std::vector<ChatMessage>& messages);
// The prompt for one user message, after an optional system message.
std::vector<uint32_t> chatml_prompt_ids(const Tokenizer& tokenizer, const std::string& user,
                                        const std::string& system = "");

}  // namespace gattn
