#include "serve/http_response.h"

#include "util/error.h"

namespace gattn {

std::string_view http_reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 417:
      return "Expectation Failed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string response_head(int status, std::string_view content_type, const HttpHeaders& headers,
                          const HttpHeaders& framing, bool close) {
  std::string head = cat("HTTP/1.1 ", status, " ", http_reason(status), "\r\n");
  if (!content_type.empty()) head += cat("Content-Type: ", content_type, "\r\n");
  for (const auto& [name, value] : framing) head += cat(name, ": ", value, "\r\n");
  head += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
  for (const auto& [name, value] : headers) head += cat(name, ": ", value, "\r\n");
  return head + "\r\n";
}

}  // namespace gattn
