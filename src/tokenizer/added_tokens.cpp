#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace gattn {

AddedTokenMatcher::AddedTokenMatcher(std::vector<Token> tokens) : tokens_(std::move(tokens)) {
  std::erase_if(tokens_, [](const Token& t) { return t.content.empty(); });
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const Token& a, const Token& b) {
    return a.content.size() > b.content.size();
  });
  for (const Token& t : tokens_) first_byte_[static_cast<uint8_t>(t.content[0])] = true;
}

const AddedTokenMatcher::Token* AddedTokenMatcher::longest_at(std::string_view text,
                                                              size_t pos) const {
  const std::string_view rest = text.substr(pos);
  for (const Token& t : tokens_)
    if (rest.starts_with(t.content)) return &t;
  return nullptr;
}

}  // namespace gattn
