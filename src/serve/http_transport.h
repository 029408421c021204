// gattn's HTTP/1.1 connection layer: one epoll thread accepts connections and reads requests
// until they are complete, under total deadlines (the header section from the request's first
// byte, the body from the end of its headers); only complete requests reach the worker threads,
// so slow clients hold a socket each, never a worker. Keep-alive, pipelining (requests answered
// in order), half-close (a client that shuts its sending side after a request gets the
// response), chunked request bodies, and "Expect: 100-continue". GET and HEAD requests have
// workers of their own, so /health answers while every other worker streams.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/http_request.h"
#include "serve/http_response.h"

namespace gattn {

struct HttpTransportOptions {
  double header_timeout_s = 10;  // request line and header fields, from the request's first byte
  double body_timeout_s = 60;    // the body, from the end of the header fields
  double idle_timeout_s = 60;    // a connection waiting for its (next) request's first byte
  double write_timeout_s = 30;   // a response the client does not read
  int workers = 8;               // threads running POST (and other) handlers
  int read_workers = 2;          // threads running GET and HEAD handlers
  int max_connections = 1024;    // more are answered 503 and closed
  HttpLimits limits = {};
};

// How a handler answers: one whole response, or a stream (chunked for HTTP/1.1 clients) of
// pieces. Each write returns false once the client is gone (then the handler stops).
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual bool send(int status, std::string_view content_type, std::string_view body,
                    const HttpHeaders& headers = {}) = 0;
  virtual bool begin_stream(int status, std::string_view content_type,
                            const HttpHeaders& headers = {}) = 0;
  virtual bool write(std::string_view piece) = 0;
  virtual bool end_stream() = 0;
  // For a handler waiting before its response: true once the client has gone (closed or reset
  // the connection). A client that only shut its sending side still gets the response: at the
  // first end of stream an HTTP/1.1 client is sent an interim "100 Continue", which a closed
  // socket answers with a reset (RFC 9110 section 15.2: clients parse unexpected 1xx responses).
  // An HTTP/1.0 client's end of stream counts as gone.
  virtual bool client_gone() = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, ResponseWriter&)>;
// The body of an error the transport answers itself (400, 408, 413, 431, 501, 503, 505).
using HttpErrorBody = std::function<std::string(int status, const std::string& message)>;

struct HttpTransportStats {
  int64_t open_connections = 0, header_timeouts = 0, body_timeouts = 0, malformed = 0,
          refused_connections = 0;
};

class HttpTransport {
 public:
  HttpTransport(const HttpTransportOptions& options, HttpHandler handler, HttpErrorBody error_body);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Listens on host:port (port 0: a free one); returns the port. An Error when it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop(): requests already received are answered, then every connection closes.
  void run();
  void stop();  // from any thread
  HttpTransportStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gattn
