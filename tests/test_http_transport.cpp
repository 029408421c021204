// gattn's HTTP/1.1 connection layer: the request parser on its own (framing, limits, malformed
// input), and a transport on loopback with a trivial handler, driven by raw sockets: every
// transport case of the outside QA pass (qa-findings D7: slow clients; D15: pipelining,
// half-close, duplicate and negative Content-Length), keep-alive, chunked bodies, "Expect:
// 100-continue", header and body deadlines, HTTP/1.0, the connection limit, and a client that
// leaves (closed: gone; half-closed: still answered).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

#include "loopback.h"
#include "serve/http_request.h"
#include "serve/http_transport.h"
#include "util/error.h"

namespace gattn {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

HttpParse parse(std::string_view bytes, int64_t max_body = 1000) {
  return parse_http_request(
      bytes, {.max_header_bytes = 512, .max_header_fields = 8, .max_body_bytes = max_body});
}

TEST(HttpRequestParser, ReadsARequestWithABody) {
  const std::string bytes =
      "\r\nPOST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-Y:  v w \r\n\r\nhelloGET";
  const HttpParse p = parse(bytes);
  ASSERT_EQ(p.state, HttpParse::State::complete) << p.error;
  EXPECT_EQ(p.request.method, "POST");
  EXPECT_EQ(p.request.path, "/v1/x");
  EXPECT_EQ(p.request.query, "a=1");
  EXPECT_EQ(p.request.body, "hello");
  EXPECT_EQ(p.request.header("x-y"), "v w");
  EXPECT_TRUE(p.request.keep_alive);
  EXPECT_EQ(bytes.substr(p.consumed), "GET");  // the next (pipelined) request's start
}

TEST(HttpRequestParser, WaitsForTheWholeRequest) {
  const std::string bytes = "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  for (size_t n = 0; n < bytes.size(); ++n) {
    const HttpParse p = parse(bytes.substr(0, n));
    EXPECT_EQ(p.state, HttpParse::State::need_more) << n;
    EXPECT_EQ(p.headers_complete, n >= bytes.size() - 5) << n;
  }
  EXPECT_EQ(parse(bytes).state, HttpParse::State::complete);
}

TEST(HttpRequestParser, DecodesChunkedBodies) {
  const std::string bytes =
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: t\r\n\r\nNEXT";
  const HttpParse p = parse(bytes);
  ASSERT_EQ(p.state, HttpParse::State::complete) << p.error;
  EXPECT_EQ(p.request.body, "helloabcdefghijklmnopqrstuvwxyz");
  EXPECT_EQ(bytes.substr(p.consumed), "NEXT");
  for (size_t n = 0; n + 4 < bytes.size(); ++n)
    EXPECT_EQ(parse(bytes.substr(0, n)).state, HttpParse::State::need_more) << n;
}

TEST(HttpRequestParser, ConnectionAndVersionRules) {
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
                  .request.expects_continue);
}

// Each malformed request: its status and a message naming what is wrong.
TEST(HttpRequestParser, RefusesMalformedRequests) {
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
       "more than one Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
       "more than one Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400, "not a non-negative integer"},
      {"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400, "not a non-negative integer"},
      {"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400, "not a non-negative integer"},
      {"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413, "limit of 1000"},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, "non-negative"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400,
       "both Transfer-Encoding and Content-Length"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "only the chunked"},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "not hexadecimal"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY", 400, "CRLF"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3E9\r\n", 413, "limit of 1000"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "not supported"},
      {"GET / HTTX/1.1\r\n\r\n", 400, "not HTTP/1.0 or HTTP/1.1"},
      {"GET /  HTTP/1.1\r\n\r\n", 400, "request line"},
      {"G(T / HTTP/1.1\r\n\r\n", 400, "method"},
      {"GET x HTTP/1.1\r\n\r\n", 400, "not a path"},
      {"GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400, "not a token"},
      {"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", 400, "folded"},
      {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "has no ':'"},
      {"GET / HTTP/1.1\r\nA: b\nC: d\r\n\r\n", 400, "control characters"},
      {std::string("GET / HTTP/1.1\r\nA: b\0c\r\n\r\n", 27), 400, "control characters"},
      {"GET / HTTP/1.1\r\nA: " + std::string(600, 'a') + "\r\n\r\n", 431, "limit of 512"},
      {"GET / HTTP/1.1\r\nA: " + std::string(600, 'a'), 431, "limit of 512"},
      {"GET / HTTP/1.1\r\n" +
           [] {
             std::string s;
             for (int i = 0; i < 9; ++i) s += "F" + std::to_string(i) + ": x\r\n";
             return s;
           }() +
           "\r\n",
       400, "more than 8 header fields"},
  };
  for (const auto& [bytes, status, message] : cases) {
    const HttpParse p = parse(bytes);
    EXPECT_EQ(p.state, HttpParse::State::error) << bytes;
    EXPECT_EQ(p.error_status, status) << bytes << ": " << p.error;
    EXPECT_NE(p.error.find(message), std::string::npos) << bytes << " gave: " << p.error;
  }
}

// A transport on a free loopback port whose handler echoes the request, serving on its own
// thread until destroyed. POST /wait waits (checking client_gone) until the test releases it.
class EchoServer {
 public:
  explicit EchoServer(HttpTransportOptions o = options())
      : t_(
            o, [this](const HttpRequest& r, ResponseWriter& w) { handle(r, w); },
            [](int status, const std::string& message) {
              return cat("{\"status\":", status, ",\"message\":\"", message, "\"}");
            }) {
    port_ = t_.bind("127.0.0.1", 0);
    thread_ = std::thread([this] { t_.run(); });
  }
  ~EchoServer() {
    release = true;
    t_.stop();
    thread_.join();
  }
  static HttpTransportOptions options() {
    HttpTransportOptions o;
    o.header_timeout_s = 2;
    o.body_timeout_s = 2;
    o.workers = 2;
    o.limits.max_body_bytes = 1000;
    return o;
  }
  int port() const { return port_; }
  const HttpTransport& transport() const { return t_; }
  std::atomic<bool> release = false;
  std::atomic<int> gone = 0, answered = 0;

 private:
  void handle(const HttpRequest& r, ResponseWriter& w) {
    if (r.path == "/wait") {
      while (!release) {
        if (w.client_gone()) {
          ++gone;
          return (void)w.send(499, "text/plain", "gone");
        }
        std::this_thread::sleep_for(20ms);
      }
      ++answered;
    }
    if (r.path == "/broken-stream") {
      w.begin_stream(200, "text/plain");
      w.write("partial");
      throw std::runtime_error("a fault in the middle of a stream");
    }
    if (r.path == "/stream") {
      w.begin_stream(200, "text/plain");
      for (const char* piece : {"one ", "two ", "three"}) w.write(piece);
      w.end_stream();
      return;
    }
    w.send(200, "text/plain", cat(r.method, " ", r.target, " [", r.body, "]"));
  }
  HttpTransport t_;
  int port_ = 0;
  std::thread thread_;
};

using testing::connect_loopback;

void send_text(int fd, std::string_view text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), ssize_t(text.size()));
}

int count(const std::string& text, const std::string& what);

// What the server sends until `enough` holds for it, it closes the connection, or `limit` passes.
std::string read_until(int fd, const std::function<bool(const std::string&)>& enough,
                       std::chrono::milliseconds limit) {
  std::string out;
  const auto end = Clock::now() + limit;
  while (!enough(out) && Clock::now() < end) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, size_t(n));
  }
  return out;
}

std::string read_until_closed(int fd, std::chrono::milliseconds limit = 5000ms) {
  return read_until(
      fd, [](const std::string&) { return false; }, limit);
}

// Reads until `count` responses' ends (a text that ends each) arrived.
std::string read_responses(int fd, const std::string& marker, int n) {
  return read_until(
      fd, [&](const std::string& out) { return count(out, marker) >= n; }, 5s);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HttpTransport, KeepAliveAndPipelinedRequestsAreAnsweredInOrder) {
  EchoServer s;
  const int fd = connect_loopback(s.port());
  send_text(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(read_responses(fd, "]", 1).find("GET /a []"), std::string::npos);
  // Three requests in one write, the last with a body: three responses, in order (QA D15).
  send_text(fd,
            "GET /b HTTP/1.1\r\n\r\nPOST /c HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
            "GET /d HTTP/1.1\r\nConnection: close\r\n\r\n");
  const std::string out = read_until_closed(fd);
  const size_t b = out.find("GET /b []"), c = out.find("POST /c [xyz]"), d = out.find("GET /d []");
  ASSERT_NE(d, std::string::npos) << out;
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);
  EXPECT_EQ(count(out, "HTTP/1.1 200 OK"), 3) << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos);
  ::close(fd);
}

TEST(HttpTransport, AHalfClosedClientGetsItsResponse) {
  EchoServer s;
  for (const std::string request :
       {"GET /a HTTP/1.1\r\n\r\n", "POST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"}) {
    const int fd = connect_loopback(s.port());
    send_text(fd, request);
    ::shutdown(fd, SHUT_WR);  // QA D15: no response before
    const std::string out = read_until_closed(fd);
    EXPECT_NE(out.find("HTTP/1.1 200 OK"), std::string::npos) << request;
    EXPECT_NE(out.find(request[0] == 'G' ? "GET /a []" : "POST /b [hi]"), std::string::npos);
    ::close(fd);
  }
}

TEST(HttpTransport, AHalfClosedClientOfAWaitingHandlerIsAnsweredAndAClosedOneIsGone) {
  EchoServer s;
  const std::string request = "POST /wait HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
  const int half = connect_loopback(s.port());
  send_text(half, request);
  ::shutdown(half, SHUT_WR);
  const int closed = connect_loopback(s.port());
  send_text(closed, request);
  std::this_thread::sleep_for(300ms);
  ::close(closed);
  const auto start = Clock::now();
  while (s.gone == 0 && Clock::now() - start < 3s) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(s.gone, 1);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(s.gone, 1) << "the half-closed client counted as gone";
  s.release = true;
  const std::string out = read_until_closed(half);
  // An interim 100 (the probe that tells a closed client from a half-closed one), then the answer.
  EXPECT_EQ(out.find("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK"), 0u) << out;
  EXPECT_NE(out.find("POST /wait []"), std::string::npos) << out;
  EXPECT_EQ(s.answered, 1);
  ::close(half);
}

TEST(HttpTransport, ChunkedBodiesAndExpectContinue) {
  EchoServer s;
  int fd = connect_loopback(s.port());
  send_text(fd, "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  std::this_thread::sleep_for(50ms);
  send_text(fd, "2\r\nde\r\n0\r\n\r\n");
  EXPECT_NE(read_responses(fd, "]", 1).find("POST /x [abcde]"), std::string::npos);
  ::close(fd);
  fd = connect_loopback(s.port());
  send_text(fd, "POST /y HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(read_responses(fd, "\r\n\r\n", 1), "HTTP/1.1 100 Continue\r\n\r\n");
  send_text(fd, "body");
  EXPECT_NE(read_responses(fd, "]", 1).find("POST /y [body]"), std::string::npos);
  ::close(fd);
}

TEST(HttpTransport, StreamsAreChunkedForHttp11AndClosedForHttp10) {
  EchoServer s;
  int fd = connect_loopback(s.port());
  send_text(fd, "GET /stream HTTP/1.1\r\nConnection: close\r\n\r\n");
  std::string out = read_until_closed(fd);
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n\r\n4\r\none \r\n4\r\ntwo \r\n5\r\nthree\r\n0\r\n\r\n"), out.npos) << out;
  ::close(fd);
  fd = connect_loopback(s.port());
  send_text(fd, "GET /stream HTTP/1.0\r\n\r\n");
  out = read_until_closed(fd);
  EXPECT_EQ(out.find("Transfer-Encoding"), std::string::npos) << out;
  EXPECT_NE(out.find("Connection: close\r\n\r\none two three"), std::string::npos) << out;
  ::close(fd);
}

// A handler that throws in the middle of a stream: the body cannot be finished, so the
// connection closes (a keep-alive client would otherwise wait for the rest forever).
TEST(HttpTransport, AStreamLeftUnfinishedClosesTheConnection) {
  EchoServer s;
  const int fd = connect_loopback(s.port());
  send_text(fd, "GET /broken-stream HTTP/1.1\r\n\r\n");
  const auto start = Clock::now();
  const std::string out = read_until_closed(fd);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_NE(out.find("7\r\npartial\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("0\r\n\r\n"), std::string::npos) << out;
  ::close(fd);
}

TEST(HttpTransport, MalformedRequestsGetTheirStatusAndTheConnectionCloses) {
  EchoServer s;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", "400 Bad Request"},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "400 Bad Request"},  // was 413 (D15)
      {"POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n", "413 Content Too Large"},
      {"GET / HTTP/3.0\r\n\r\n", "505 HTTP Version Not Supported"},
  };
  for (const auto& [request, status] : cases) {
    const int fd = connect_loopback(s.port());
    send_text(fd, request);
    const std::string out = read_until_closed(fd);
    EXPECT_EQ(out.find("HTTP/1.1 " + status), 0u) << request << " gave " << out;
    EXPECT_NE(out.find("Connection: close"), std::string::npos);
    EXPECT_NE(out.find("\"message\":"), std::string::npos) << out;
    ::close(fd);
  }
  EXPECT_EQ(s.transport().stats().malformed, int64_t(cases.size()));
}

TEST(HttpTransport, HeaderAndBodyDeadlinesAreTotalNotPerRead) {
  EchoServer s;
  const int header = connect_loopback(s.port());
  const int body = connect_loopback(s.port());
  send_text(body, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab");
  const auto start = Clock::now();
  // One byte every 200 ms never finishes the header section: 408 after the 2 s deadline.
  std::string out;
  for (int i = 0; i < 30 && out.empty(); ++i) {
    ::send(header, "G", 1, MSG_NOSIGNAL);
    pollfd p{.fd = header, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 200) > 0) out = read_until_closed(header);
  }
  const double s_taken = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(out.find("HTTP/1.1 408 Request Timeout"), 0u) << out;
  EXPECT_NE(out.find("header fields did not arrive within 2 s"), std::string::npos);
  EXPECT_GT(s_taken, 1.8);
  EXPECT_LT(s_taken, 3.5);
  const std::string body_out = read_until_closed(body);
  EXPECT_NE(body_out.find("body did not arrive within 2 s"), std::string::npos) << body_out;
  EXPECT_EQ(s.transport().stats().header_timeouts, 1);
  EXPECT_EQ(s.transport().stats().body_timeouts, 1);
  ::close(header);
  ::close(body);
}

// QA D7 at test size: 100 connections trickling header bytes and 100 silent ones hold no
// worker; /health-like requests on fresh connections answer at once meanwhile.
TEST(HttpTransport, SlowClientsDoNotDelayOthers) {
  HttpTransportOptions o = EchoServer::options();
  o.header_timeout_s = 10;
  EchoServer s(o);
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) slow.push_back(connect_loopback(s.port()));
  std::vector<double> ms;
  for (int round = 0; round < 10; ++round) {
    for (size_t i = 0; i < slow.size(); i += 2) ::send(slow[i], "G", 1, MSG_NOSIGNAL);
    const auto start = Clock::now();
    const int fd = connect_loopback(s.port());
    send_text(fd, "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string out = read_until_closed(fd, 1000ms);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    EXPECT_NE(out.find("GET /health []"), std::string::npos) << out;
    ::close(fd);
    std::this_thread::sleep_for(100ms);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("probe latency with 200 slow connections: median %.1f ms, worst %.1f ms\n",
              ms[ms.size() / 2], ms.back());
  EXPECT_LT(ms.back(), 1000);
  EXPECT_EQ(s.transport().stats().open_connections, 200);
  for (int fd : slow) ::close(fd);
}

TEST(HttpTransport, ConnectionsOverTheLimitGet503) {
  HttpTransportOptions o = EchoServer::options();
  o.max_connections = 2;
  EchoServer s(o);
  const int a = connect_loopback(s.port()), b = connect_loopback(s.port());
  std::this_thread::sleep_for(100ms);
  const int c = connect_loopback(s.port());
  EXPECT_EQ(read_until_closed(c).find("HTTP/1.1 503 Service Unavailable"), 0u);
  EXPECT_EQ(s.transport().stats().refused_connections, 1);
  for (int fd : {a, b, c}) ::close(fd);
}

}  // namespace
}  // namespace gattn
