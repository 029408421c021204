#include "serve/http_request.h"

#include <algorithm>
#include <cctype>

#include "util/error.h"

namespace gattn {

std::optional<std::string_view> HttpRequest::header(std::string_view lower_case_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_case_name) return value;
  return std::nullopt;
}

namespace {
constexpr std::string_view kCrlf = "\r\n";

// RFC 9110 section 5.6.2: the characters of a token (methods, field names).
bool is_token_char(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(char(c)) != std::string_view::npos;
}
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_token_char(c); });
}
// Field values: visible characters, spaces, tabs and bytes >= 0x80 (obs-text); no other control.
bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
// The comma-separated, trimmed and lower-cased elements of a list-valued field.
std::vector<std::string> list_elements(std::string_view value) {
  std::vector<std::string> out;
  while (true) {
    const size_t comma = value.find(',');
    const std::string_view element = trim(value.substr(0, comma));
    if (!element.empty()) out.push_back(lower(element));
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

HttpParse failed(int status, std::string message) {
  HttpParse p;
  p.state = HttpParse::State::error;
  p.error_status = status;
  p.error = std::move(message);
  return p;
}

// "METHOD SP request-target SP HTTP/1.x"; an error message, or empty when it is valid.
std::string parse_request_line(std::string_view line, HttpRequest& r, int& status) {
  status = 400;
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return "the request line is not 'METHOD TARGET HTTP/1.1'";
  r.method = std::string(line.substr(0, sp1));
  r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(r.method)) return "the request's method is not a token";
  if (r.target.empty() || !is_field_value(r.target) ||
      r.target.find_first_of(" \t") != r.target.npos)
    return "the request target is empty or has spaces or control characters";
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !std::isdigit(version[5]) ||
      version[6] != '.' || !std::isdigit(version[7]))
    return cat("the request line's version '", version, "' is not HTTP/1.0 or HTTP/1.1");
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    status = 505;
    return cat("HTTP version ", version.substr(5), " is not supported (1.0 and 1.1 are)");
  }
  r.minor_version = version[7] - '0';
  std::string_view path = r.target;
  if (path.starts_with("http://") || path.starts_with("https://")) {  // absolute-form
    const size_t slash = path.find('/', path.find("//") + 2);
    path = slash == std::string_view::npos ? "/" : path.substr(slash);
  }
  if (path.front() != '/' && path != "*") return "the request target is not a path";
  const size_t question = path.find('?');
  r.path = std::string(path.substr(0, question));
  if (question != std::string_view::npos) r.query = std::string(path.substr(question + 1));
  return {};
}

// "name: value" lines, each ending in CRLF; an error message, or empty when they are valid.
std::string parse_fields(std::string_view section, HttpRequest& r, int max_fields) {
  while (!section.empty()) {
    const size_t end = section.find(kCrlf);
    const std::string_view line = section.substr(0, end);
    section.remove_prefix(end + 2);
    if (line.front() == ' ' || line.front() == '\t')
      return "a header field is folded over lines (obsolete line folding is not accepted)";
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return cat("the header line '", line, "' has no ':'");
    const std::string_view name = line.substr(0, colon);
    if (!is_token(name))
      return cat("the header field name '", name, "' is not a token (no spaces before ':')");
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return cat("header field ", name, " has control characters");
    if (int(r.headers.size()) == max_fields)
      return cat("the request has more than ", max_fields, " header fields");
    r.headers.emplace_back(lower(name), std::string(value));
  }
  return {};
}

// Digits only: a Content-Length or a chunk size (base 10 or 16). nullopt when not a number or
// too long to be a size.
std::optional<int64_t> parse_size(std::string_view s, int base) {
  if (s.empty() || s.size() > (base == 10 ? 18u : 15u)) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                  : base == 16 && std::isxdigit(static_cast<unsigned char>(c))
                      ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                      : -1;
    if (d < 0) return std::nullopt;
    v = v * base + d;
  }
  return v;
}

struct Framing {
  bool chunked = false;
  int64_t length = 0;
};

// How the body is framed (RFC 9112 section 6.3), or an error.
HttpParse framing(const HttpRequest& r, const HttpLimits& limits, Framing& f) {
  std::vector<std::string> lengths, codings;
  for (const auto& [name, value] : r.headers) {
    if (name == "content-length") lengths.push_back(value);
    if (name == "transfer-encoding")
      for (std::string& c : list_elements(value)) codings.push_back(std::move(c));
  }
  if (!codings.empty()) {
    if (!lengths.empty())
      return failed(400, "the request has both Transfer-Encoding and Content-Length");
    if (r.minor_version == 0) return failed(400, "an HTTP/1.0 request has a Transfer-Encoding");
    if (codings != std::vector<std::string>{"chunked"})
      return failed(501, "only the chunked transfer coding is supported");
    f.chunked = true;
    return {};
  }
  if (lengths.size() > 1) return failed(400, "the request has more than one Content-Length");
  if (lengths.empty()) return {};
  const std::optional<int64_t> n = parse_size(lengths[0], 10);
  if (!n)
    return failed(400, cat("Content-Length '", lengths[0], "' is not a non-negative integer"));
  if (*n > limits.max_body_bytes)
    return failed(413, cat("the request body (", *n, " bytes) exceeds the server's limit of ",
                           limits.max_body_bytes, " bytes"));
  f.length = *n;
  return {};
}

// The chunked body starting at `bytes`: need_more, complete (with `consumed` its length) or an
// error. Chunk extensions and trailer fields are read and dropped.
HttpParse dechunk(std::string_view bytes, const HttpLimits& limits, std::string& body) {
  HttpParse p;
  size_t at = 0;
  while (true) {
    const size_t eol = bytes.find(kCrlf, at);
    if (eol == std::string_view::npos)
      return bytes.size() - at > 1024 ? failed(400, "a chunk-size line is longer than 1 KiB") : p;
    std::string_view line = bytes.substr(at, eol - at);
    const std::string_view extension = line.substr(std::min(line.find(';'), line.size()));
    const std::optional<int64_t> size = parse_size(trim(line.substr(0, line.find(';'))), 16);
    if (!size || !is_field_value(extension))
      return failed(400, cat("the chunk-size line '", line.substr(0, 40), "' is not hexadecimal"));
    if (int64_t(body.size()) + *size > limits.max_body_bytes)
      return failed(413, cat("the chunked request body exceeds the server's limit of ",
                             limits.max_body_bytes, " bytes"));
    at = eol + 2;
    if (*size == 0) break;
    if (bytes.size() - at < size_t(*size) + 2) return p;
    body.append(bytes.substr(at, size_t(*size)));
    at += size_t(*size);
    if (bytes.substr(at, 2) != kCrlf) return failed(400, "a chunk's data is not followed by CRLF");
    at += 2;
  }
  // Trailer fields up to an empty line.
  const size_t start = at;
  while (true) {
    const size_t eol = bytes.find(kCrlf, at);
    if (eol == std::string_view::npos)
      return int64_t(bytes.size() - start) > limits.max_header_bytes
                 ? failed(431, "the chunked body's trailer fields exceed the header limit")
                 : p;
    if (eol == at) break;
    if (!is_field_value(bytes.substr(at, eol - at)))
      return failed(400, "a trailer field has control characters");
    at = eol + 2;
  }
  p.state = HttpParse::State::complete;
  p.consumed = at + 2;
  return p;
}
}  // namespace

HttpParse parse_http_request(std::string_view bytes, const HttpLimits& limits) {
  size_t skipped = 0;
  while (bytes.substr(skipped, 2) == kCrlf) skipped += 2;
  const std::string_view message = bytes.substr(skipped);
  HttpParse p;
  HttpRequest& r = p.request;
  int status = 400;
  const size_t line_end = message.find(kCrlf);
  if (line_end != std::string_view::npos && int64_t(line_end) <= limits.max_header_bytes) {
    const std::string error = parse_request_line(message.substr(0, line_end), r, status);
    if (!error.empty()) return failed(status, error);
  }
  const size_t head_end = message.find("\r\n\r\n");
  const bool over = int64_t(head_end == std::string_view::npos ? message.size() : head_end) >
                    limits.max_header_bytes;
  if (over)
    return failed(431, cat("the request line and header fields exceed the server's limit of ",
                           limits.max_header_bytes, " bytes"));
  if (head_end == std::string_view::npos) return p;
  // Bare CR, LF and NUL inside the lines are control characters, refused by the checks above.
  const std::string_view section = message.substr(line_end + 2, head_end + 2 - (line_end + 2));
  const std::string error = parse_fields(section, r, limits.max_header_fields);
  if (!error.empty()) return failed(400, error);
  std::vector<std::string> options;
  for (const auto& [name, value] : r.headers) {
    if (name == "connection")
      for (std::string& option : list_elements(value)) options.push_back(std::move(option));
    if (name == "expect" && lower(value) == "100-continue") r.expects_continue = true;
  }
  const auto has = [&](std::string_view o) {
    return std::find(options.begin(), options.end(), o) != options.end();
  };
  r.keep_alive = !has("close") && (r.minor_version == 1 || has("keep-alive"));
  Framing f;
  if (HttpParse e = framing(r, limits, f); e.state == HttpParse::State::error) return e;
  p.headers_complete = true;
  const size_t body_start = skipped + head_end + 4;
  if (f.chunked) {
    HttpParse chunks = dechunk(bytes.substr(body_start), limits, r.body);
    if (chunks.state == HttpParse::State::error) return chunks;
    if (chunks.state == HttpParse::State::need_more) {
      r.body.clear();
      return p;
    }
    p.consumed = body_start + chunks.consumed;
  } else {
    if (bytes.size() - body_start < size_t(f.length)) return p;
    r.body = std::string(bytes.substr(body_start, size_t(f.length)));
    p.consumed = body_start + size_t(f.length);
  }
  p.state = HttpParse::State::complete;
  return p;
}

}  // namespace gattn
