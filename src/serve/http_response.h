// The head of an HTTP/1.1 response: status line, header fields and the empty line.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gattn {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The reason phrase of a status code ("Not Found"; "Unknown" for codes gattn does not send).
std::string_view http_reason(int status);

// "HTTP/1.1 <status> <reason>", Content-Type, the framing fields (Content-Length or
// Transfer-Encoding), "Connection: close" or "keep-alive", then `headers`.
std::string response_head(int status, std::string_view content_type, const HttpHeaders& headers,
                          const HttpHeaders& framing, bool close);

}  // namespace gattn
