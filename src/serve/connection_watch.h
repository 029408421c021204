// Whether the client of a request that is not streamed is still there while its job runs: a
// client that went away must free its decode slot at once, not when its request would have
// finished. cpp-httplib 0.11 gives a handler no socket, so the connection's own socket is found
// by its two addresses (the request's local and remote address and port).
#pragma once
#include <string>

namespace gattn {

class ConnectionWatch {
 public:
  ConnectionWatch(const std::string& local_addr, int local_port, const std::string& remote_addr,
                  int remote_port);
  bool found() const { return socket_ >= 0; }
  // True once the client has closed the connection or reset it: a read there would see its end
  // (a client that only shuts down its sending side looks the same; as nginx does, it counts as
  // gone). False while it is open, when it sent more (a pipelined request), or when not found.
  bool closed() const;

 private:
  int socket_ = -1;  // owned by the HTTP server, open while the request's handler runs
};

}  // namespace gattn
