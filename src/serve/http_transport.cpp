#include "serve/http_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "serve/http_response.h"
#include "util/error.h"

namespace gattn {

namespace {
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Threads that run posted tasks in order; finish() runs what is queued, then joins them.
class WorkerPool {
 public:
  void start(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(m_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  void finish() {
    {
      std::lock_guard lock(m_);
      finishing_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void work() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return finishing_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool finishing_ = false;
  std::vector<std::thread> threads_;
};

struct Connection {
  explicit Connection(int socket) : fd(socket) {}
  enum class Phase {
    idle,     // waiting for a request's first byte
    header,   // reading the request line and header fields
    body,     // reading the body
    busy,     // a worker answers a request; the loop does not watch the socket
    closing,  // an error was answered: reading what the client still sends until it closes
  };
  const int fd;
  std::string in;  // bytes received, not yet part of a request handed to a worker
  Phase phase = Phase::header;
  Clock::time_point deadline;
  bool eof = false;            // the client shut its sending side
  bool continue_sent = false;  // "100 Continue" sent for the request being read
  bool close_after = false;    // set by the worker: close once the response is out
};

// A worker's answer to one request on its connection.
class ConnectionWriter final : public ResponseWriter {
 public:
  ConnectionWriter(Connection& c, const HttpRequest& r, double write_timeout_s,
                   const std::atomic<bool>& stopping)
      : c_(c), r_(r), write_timeout_s_(write_timeout_s), stopping_(stopping) {}

  bool started() const { return started_; }
  // Close once answered: asked to, the client is gone, or the response was left unfinished (a
  // handler that threw in the middle of a stream: the connection cannot carry another response).
  bool close_after() const { return !ok_ || close_ || !finished_; }

  bool send(int status, std::string_view content_type, std::string_view body,
            const HttpHeaders& headers) override {
    GATTN_ASSERT(!started_, "a response was already sent");
    started_ = true;
    close_ = !r_.keep_alive || stopping_;
    std::string bytes = response_head(status, content_type, headers,
                                      {{"Content-Length", std::to_string(body.size())}}, close_);
    if (r_.method != "HEAD") bytes += body;
    finished_ = true;
    return put(bytes);
  }
  bool begin_stream(int status, std::string_view content_type,
                    const HttpHeaders& headers) override {
    GATTN_ASSERT(!started_, "a response was already sent");
    started_ = true;
    chunked_ = r_.minor_version == 1;
    close_ = !r_.keep_alive || stopping_ || !chunked_;  // HTTP/1.0: the close ends the body
    HttpHeaders framing;
    if (chunked_) framing.emplace_back("Transfer-Encoding", "chunked");
    return put(response_head(status, content_type, headers, framing, close_));
  }
  bool write(std::string_view piece) override {
    GATTN_ASSERT(started_, "write before begin_stream");
    if (piece.empty()) return ok_;  // an empty chunk would end the body
    return put(chunked_ ? cat(std::hex, piece.size(), "\r\n", piece, "\r\n") : std::string(piece));
  }
  bool end_stream() override {
    finished_ = true;
    return chunked_ ? put("0\r\n\r\n") : ok_;
  }

  bool client_gone() override {
    if (!ok_) return true;
    pollfd p{.fd = c_.fd, .events = POLLIN | POLLRDHUP, .revents = 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return gone();
    char byte = 0;
    const ssize_t n = ::recv(c_.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;  // a pipelined request
    if (n < 0) return errno == EAGAIN || errno == EINTR ? false : gone();
    if (r_.minor_version == 0) return gone();
    if (!probed_ && !started_) {  // end of stream: closed, or only half-closed?
      probed_ = true;
      if (!put("HTTP/1.1 100 Continue\r\n\r\n")) return true;
    }
    return false;
  }

 private:
  bool gone() {
    ok_ = false;
    return true;
  }
  // Sends every byte within the write deadline; false (and the connection is then closed) when
  // the client is gone or does not read.
  bool put(std::string_view data) {
    if (!ok_) return false;
    const auto deadline = after(write_timeout_s_);
    while (!data.empty()) {
      const ssize_t n = ::send(c_.fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && left.count() > 0) {
        pollfd p{.fd = c_.fd, .events = POLLOUT, .revents = 0};
        ::poll(&p, 1, int(std::min<int64_t>(left.count(), 1000)));
        continue;
      }
      return gone();
    }
    return true;
  }

  Connection& c_;
  const HttpRequest& r_;
  const double write_timeout_s_;
  const std::atomic<bool>& stopping_;
  bool started_ = false, chunked_ = false, close_ = false, probed_ = false, ok_ = true,
       finished_ = false;
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }
}  // namespace

struct HttpTransport::Impl {
  Impl(const HttpTransportOptions& options, HttpHandler h, HttpErrorBody e)
      : o(options), handler(std::move(h)), error_body(std::move(e)) {}
  ~Impl();

  void loop();
  void accept_all();
  void on_readable(Connection& c);
  void process(Connection& c);
  void dispatch(Connection& c, HttpRequest request);
  void serve(Connection& c, const HttpRequest& request);
  void take_returned();
  void reply_and_close(Connection& c, int status, const std::string& message);
  void expire();
  int next_timeout_ms() const;
  void watch(Connection& c);
  void close_connection(Connection& c);
  void end_all();
  // An error response the transport answers itself, then closes the connection.
  std::string whole_error(int status, const std::string& message) const {
    const std::string body = error_body(status, message);
    return response_head(status, "application/json", {},
                         {{"Content-Length", std::to_string(body.size())}}, true) +
           body;
  }

  const HttpTransportOptions o;
  const HttpHandler handler;
  const HttpErrorBody error_body;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, spare_fd = -1;
  std::atomic<bool> stopping = false;
  std::unordered_map<int, std::unique_ptr<Connection>> connections;  // the loop's thread only
  std::mutex returned_m;
  std::vector<Connection*> returned;  // answered by a worker, back to the loop
  std::atomic<int> busy = 0;
  WorkerPool workers, read_workers;
  mutable std::mutex stats_m;
  HttpTransportStats stats;
};

HttpTransport::Impl::~Impl() {
  for (int fd : {listen_fd, epoll_fd, wake_fd, spare_fd})
    if (fd >= 0) ::close(fd);
  for (auto& [fd, c] : connections) ::close(fd);
}

void HttpTransport::Impl::watch(Connection& c) {
  epoll_event e{.events = EPOLLIN | EPOLLRDHUP, .data = {.fd = c.fd}};
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c.fd, &e);
}

void HttpTransport::Impl::close_connection(Connection& c) {
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  const int fd = c.fd;
  ::close(fd);
  connections.erase(fd);
  std::lock_guard lock(stats_m);
  --stats.open_connections;
}

void HttpTransport::Impl::accept_all() {
  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
      // Out of descriptors: accept with the spare one and close at once, or the listener stays
      // readable and the loop spins.
      ::close(spare_fd);
      fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) ::close(fd);
      spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      std::lock_guard lock(stats_m);
      ++stats.refused_connections;
      continue;
    }
    if (fd < 0) return;  // EAGAIN: none left (or an error of that one connection)
    if (int64_t(connections.size()) >= o.max_connections) {
      {
        std::lock_guard lock(stats_m);
        ++stats.refused_connections;
      }
      const std::string reply = whole_error(
          503, cat("the server has its maximum of ", o.max_connections, " connections open"));
      [[maybe_unused]] const ssize_t sent = ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>(fd);
    c->deadline = after(o.header_timeout_s);  // a new connection's first request
    watch(*c);
    connections.emplace(fd, std::move(c));
    std::lock_guard lock(stats_m);
    ++stats.open_connections;
  }
}

void HttpTransport::Impl::on_readable(Connection& c) {
  char buffer[65536];
  const int64_t most =
      o.limits.max_header_bytes + 8 * o.limits.max_body_bytes + int64_t(sizeof buffer);
  for (int reads = 0; reads < 4; ++reads) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n == 0) {
      c.eof = true;
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return close_connection(c);  // reset
    }
    if (c.phase != Connection::Phase::closing) c.in.append(buffer, size_t(n));
  }
  if (c.phase == Connection::Phase::closing) {
    if (c.eof) close_connection(c);
    return;
  }
  if (int64_t(c.in.size()) > most)
    return reply_and_close(c, 413, "the request's framing exceeds the server's body limit");
  if (c.phase == Connection::Phase::idle && !c.in.empty()) {
    c.phase = Connection::Phase::header;
    c.deadline = after(o.header_timeout_s);
  }
  process(c);
}

void HttpTransport::Impl::process(Connection& c) {
  if (c.in.empty()) {
    if (c.eof) close_connection(c);
    return;
  }
  HttpParse p = parse_http_request(c.in, o.limits);
  if (p.state == HttpParse::State::error) {
    {
      std::lock_guard lock(stats_m);
      ++stats.malformed;
    }
    return reply_and_close(c, p.error_status, p.error);
  }
  if (p.state == HttpParse::State::complete) {
    c.in.erase(0, p.consumed);
    return dispatch(c, std::move(p.request));
  }
  if (p.headers_complete && c.phase == Connection::Phase::header) {
    c.phase = Connection::Phase::body;
    c.deadline = after(o.body_timeout_s);
    if (p.request.expects_continue && p.request.minor_version == 1 && !c.continue_sent) {
      c.continue_sent = true;
      constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] const ssize_t sent =
          ::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL);
    }
  }
  if (c.eof) close_connection(c);  // the client ended in the middle of a request
}

void HttpTransport::Impl::dispatch(Connection& c, HttpRequest request) {
  c.phase = Connection::Phase::busy;
  c.continue_sent = false;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  ++busy;
  const bool reads = request.method == "GET" || request.method == "HEAD";
  auto task = [this, &c, r = std::move(request)] { serve(c, r); };
  (reads ? read_workers : workers).post(std::move(task));
}

// On a worker: the handler's answer (a 500 when it throws before answering), then the
// connection goes back to the loop.
void HttpTransport::Impl::serve(Connection& c, const HttpRequest& request) {
  ConnectionWriter w(c, request, o.write_timeout_s, stopping);
  try {
    handler(request, w);
    GATTN_ASSERT(w.started(), "the handler of ", request.method, " ", request.path,
                 " gave no response");
  } catch (const std::exception& e) {
    if (!w.started()) w.send(500, "application/json", error_body(500, e.what()), {});
  }
  c.close_after = w.close_after();
  {
    std::lock_guard lock(returned_m);
    returned.push_back(&c);
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  --busy;
}

void HttpTransport::Impl::take_returned() {
  std::vector<Connection*> back;
  {
    std::lock_guard lock(returned_m);
    back.swap(returned);
  }
  for (Connection* c : back) {
    if (c->close_after) {
      close_connection(*c);
      continue;
    }
    c->phase = c->in.empty() ? Connection::Phase::idle : Connection::Phase::header;
    c->deadline = after(c->in.empty() ? o.idle_timeout_s : o.header_timeout_s);
    watch(*c);
    process(*c);  // a pipelined request may be whole already
  }
}

void HttpTransport::Impl::reply_and_close(Connection& c, int status, const std::string& message) {
  const std::string reply = whole_error(status, message);
  [[maybe_unused]] const ssize_t sent = ::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL);
  // A lingering close: the client reads the reply before the connection goes away (closing
  // with unread bytes would reset it and could discard the reply).
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Connection::Phase::closing;
  c.in.clear();
  c.deadline = after(2);
}

void HttpTransport::Impl::expire() {
  const auto now = Clock::now();
  std::vector<Connection*> due;
  for (auto& [fd, c] : connections)
    if (c->phase != Connection::Phase::busy && c->deadline <= now) due.push_back(c.get());
  for (Connection* c : due) {
    std::lock_guard lock(stats_m);
    switch (c->phase) {
      case Connection::Phase::header:
        ++stats.header_timeouts;
        break;
      case Connection::Phase::body:
        ++stats.body_timeouts;
        break;
      default:
        break;
    }
  }
  for (Connection* c : due) {
    if (c->phase == Connection::Phase::header)
      reply_and_close(
          *c, 408,
          cat("the request's header fields did not arrive within ", o.header_timeout_s, " s"));
    else if (c->phase == Connection::Phase::body)
      reply_and_close(*c, 408,
                      cat("the request's body did not arrive within ", o.body_timeout_s,
                          " s of its header fields"));
    else
      close_connection(*c);  // idle (keep-alive) or done closing
  }
}

int HttpTransport::Impl::next_timeout_ms() const {
  auto next = Clock::now() + 1s;
  for (const auto& [fd, c] : connections)
    if (c->phase != Connection::Phase::busy) next = std::min(next, c->deadline);
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
  return int(std::clamp<int64_t>(ms, 0, 1000));
}

void HttpTransport::Impl::loop() {
  epoll_event events[64];
  while (!stopping) {
    const int n = ::epoll_wait(epoll_fd, events, 64, next_timeout_ms());
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd) {
        accept_all();
      } else if (fd == wake_fd) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd, &count, sizeof count);
        take_returned();
      } else if (const auto it = connections.find(fd); it != connections.end()) {
        if (it->second->phase != Connection::Phase::busy) on_readable(*it->second);
      }
    }
    expire();
  }
}

// After the loop: requests being answered get 2 s to finish (streams end themselves when the
// server stops), then their sockets are shut so that no write waits for a client.
void HttpTransport::Impl::end_all() {
  ::close(listen_fd);
  listen_fd = -1;
  const auto limit = Clock::now() + 2s;
  while (busy > 0 && Clock::now() < limit) std::this_thread::sleep_for(5ms);
  for (auto& [fd, c] : connections)
    if (c->phase == Connection::Phase::busy) ::shutdown(fd, SHUT_RDWR);
  workers.finish();
  read_workers.finish();
  for (auto& [fd, c] : connections) ::close(fd);
  connections.clear();
  std::lock_guard lock(stats_m);
  stats.open_connections = 0;
}

HttpTransport::HttpTransport(const HttpTransportOptions& options, HttpHandler handler,
                             HttpErrorBody error_body)
    : impl_(std::make_unique<Impl>(options, std::move(handler), std::move(error_body))) {
  if (options.workers < 1 || options.read_workers < 1 || options.max_connections < 1)
    fail("serve: the worker and connection counts must be positive");
  for (double s : {options.header_timeout_s, options.body_timeout_s, options.idle_timeout_s,
                   options.write_timeout_s})
    if (!(s > 0)) fail("serve: every timeout must be positive, not ", s);
  Impl& m = *impl_;
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  m.spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (m.epoll_fd < 0 || m.wake_fd < 0) fail("serve: cannot create the event loop's descriptors");
  epoll_event e{.events = EPOLLIN, .data = {.fd = m.wake_fd}};
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &e);
}

HttpTransport::~HttpTransport() = default;

int HttpTransport::bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    fail("serve: cannot resolve the address ", host);
  Impl& m = *impl_;
  for (addrinfo* a = found; a && m.listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    const int one = 1;
    if (fd >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
        ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0)
      m.listen_fd = fd;
    else if (fd >= 0)
      ::close(fd);
  }
  ::freeaddrinfo(found);
  if (m.listen_fd < 0) fail("serve: cannot listen on ", host, ":", port);
  set_nonblocking(m.listen_fd);
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  ::getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&address), &size);
  return address.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

void HttpTransport::run() {
  Impl& m = *impl_;
  GATTN_ASSERT(m.listen_fd >= 0, "run() before bind()");
  epoll_event e{.events = EPOLLIN, .data = {.fd = m.listen_fd}};
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &e);
  m.workers.start(m.o.workers);
  m.read_workers.start(m.o.read_workers);
  m.loop();
  m.end_all();
}

void HttpTransport::stop() {
  impl_->stopping = true;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(impl_->wake_fd, &one, sizeof one);
}

HttpTransportStats HttpTransport::stats() const {
  std::lock_guard lock(impl_->stats_m);
  return impl_->stats;
}

}  // namespace gattn
