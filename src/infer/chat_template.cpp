#include "infer/chat_template.h"

#include "util/error.h"

namespace gattn {

void check_chatml_tokens(const Tokenizer& tokenizer) {
  for (const char* token : {"<|im_start|>", "<|im_end|>"})
    if (!tokenizer.token_to_id(token))
      fail(tokenizer.origin(), ": chat needs the ChatML token ", token,
           ", which this tokenizer does not have");
}

}  // namespace gattn
