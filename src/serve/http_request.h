// HTTP/1.1 requests (RFC 9112) read from a connection's bytes: the request line, header fields,
// and a body framed by one Content-Length or by chunked transfer coding. The parser is a pure
// function of the bytes received so far, so the connection layer calls it again whenever more
// arrive; it never reads past the limits, and every malformed request gets an HTTP status and a
// message naming what is wrong (400; 413 for a body over the limit; 431 for headers over it; 501
// for a transfer coding other than chunked; 505 for an HTTP version other than 1.0 and 1.1).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gattn {

struct HttpRequest {
  std::string method, target, path, query;                   // target = path[?query]
  int minor_version = 1;                                     // HTTP/1.<minor>: 0 or 1
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;                                          // without its chunked framing
  bool keep_alive = true;         // HTTP/1.1 unless "Connection: close"; 1.0 only with "keep-alive"
  bool expects_continue = false;  // "Expect: 100-continue"

  // The value of a header field, if present (the first when repeated).
  std::optional<std::string_view> header(std::string_view lower_case_name) const;
};

struct HttpLimits {
  int64_t max_header_bytes = 16 << 10;  // request line + header fields
  int max_header_fields = 100;
  int64_t max_body_bytes = 1 << 20;
};

struct HttpParse {
  enum class State {
    need_more,  // the request is incomplete: read more bytes and parse again
    complete,   // `request` is whole; it took the first `consumed` bytes
    error,      // malformed or over a limit: answer `error_status` and close the connection
  } state = State::need_more;
  bool headers_complete = false;  // the header section has ended (the body may still be coming)
  size_t consumed = 0;
  HttpRequest request;
  int error_status = 0;
  std::string error;
};

// Parses the request at the start of `bytes` (empty lines before it are skipped, as RFC 9112
// section 2.2 allows). With pipelining, the bytes after `consumed` belong to the next request.
HttpParse parse_http_request(std::string_view bytes, const HttpLimits& limits);

}  // namespace gattn
