#include "infer/chat_template.h"

#include "util/error.h"

namespace gattn {

void check_chatml_tokens(const Tokenizer& tokenizer) {
  for (const char* token : {"<|im_start|>", "<|im_end|>"})
    if (!tokenizer.token_to_id(token))
      fail(tokenizer.origin(), ": chat needs the ChatML token ", token,
           ", which this tokenizer does not have");
}

std::vector<uint32_t> chatml_ids(const Tokenizer& tokenizer,
                                 const std::vector<ChatMessage>& messages) {
  check_chatml_tokens(tokenizer);
  const uint32_t start = *tokenizer.token_to_id("<|im_start|>");
  const uint32_t end = *tokenizer.token_to_id("<|im_end|>");
  constexpr auto as_text = Tokenizer::AddedTokens::as_text;
  // The pieces between control tokens are those encode() cut the template's text into before,
  // so a conversation without added tokens in it gets the same ids as then.
  std::vector<uint32_t> ids;
  for (const ChatMessage& m : messages) {
    ids.push_back(start);
    tokenizer.encode_append(m.role + "\n" + m.content, ids, as_text);
    ids.push_back(end);
    tokenizer.encode_append("\n", ids, as_text);
  }
  ids.push_back(start);
  tokenizer.encode_append("assistant\n", ids, as_text);
  return ids;
}

std::vector<uint32_t> chatml_prompt_ids(const Tokenizer& tokenizer, const std::string& user,
                                        const std::string& system) {
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({.role = "system", .content = system});
  messages.push_back({.role = "user", .content = user});
  return chatml_ids(tokenizer, messages);
}

}  // namespace gattn
