// Fuzz target: the body of an OpenAI-compatible request to gattn serve, as /v1/completions and as
// /v1/chat/completions (depth-limited parse, then every field validated).
#include <string_view>

#include "fuzz_input.h"
#include "serve/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  gattn::fuzz::expect_only_errors([&] { (void)gattn::parse_completion_request(body); });
  return gattn::fuzz::expect_only_errors([&] { (void)gattn::parse_chat_request(body); });
}
