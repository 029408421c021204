// Fuzz target: the raw bytes a client sends on a connection to gattn serve, read as the
// connection layer reads them: requests parsed one after another (pipelining) until the bytes
// run out or one is malformed. Checked on every input: no crash or exception; a complete request
// consumes at least one byte and no more than it has; its body respects the limit; and it is
// not already complete one byte earlier (the parser never answers before the request is whole).
#include <string_view>

#include "fuzz_input.h"
#include "serve/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const gattn::HttpLimits limits{
      .max_header_bytes = 1024, .max_header_fields = 16, .max_body_bytes = 4096};
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int requests = 0; requests < 64; ++requests) {
    const gattn::HttpParse p = gattn::parse_http_request(bytes, limits);
    if (p.state != gattn::HttpParse::State::complete) {
      if (p.state == gattn::HttpParse::State::error && (p.error_status < 400 || p.error.empty()))
        __builtin_trap();
      return 0;
    }
    if (p.consumed == 0 || p.consumed > bytes.size() ||
        int64_t(p.request.body.size()) > limits.max_body_bytes)
      __builtin_trap();
    if (gattn::parse_http_request(bytes.substr(0, p.consumed - 1), limits).state ==
        gattn::HttpParse::State::complete)
      __builtin_trap();
    bytes.remove_prefix(p.consumed);
  }
  return 0;
}
