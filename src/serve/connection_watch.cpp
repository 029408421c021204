#include "serve/connection_watch.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <utility>

namespace gattn {

namespace {
using Endpoint = std::pair<std::string, int>;

// A socket's own (or its peer's) address and port, the host written as cpp-httplib writes it
// (getnameinfo, numeric); nothing for what is not an IP socket.
std::optional<Endpoint> endpoint(int fd, bool peer) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  auto* a = reinterpret_cast<sockaddr*>(&address);
  if ((peer ? getpeername(fd, a, &length) : getsockname(fd, a, &length)) != 0) return {};
  int port = 0;
  if (address.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  else if (address.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  else
    return {};
  char host[NI_MAXHOST] = {};
  if (getnameinfo(a, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return Endpoint{host, port};
}
}  // namespace

ConnectionWatch::ConnectionWatch(const std::string& local_addr, int local_port,
                                 const std::string& remote_addr, int remote_port) {
  const Endpoint local{local_addr, local_port}, remote{remote_addr, remote_port};
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    if (endpoint(fd, false) == local && endpoint(fd, true) == remote) {
      socket_ = fd;
      return;
    }
  }
}

bool ConnectionWatch::closed() const {
  if (socket_ < 0) return false;
  pollfd p{.fd = socket_, .events = POLLIN, .revents = 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;
  char byte;
  const ssize_t n = recv(socket_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace gattn
