#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace gattn {

namespace {
std::atomic<long long> g_fail_write_at{0};
std::atomic<long long> g_writes{0};
std::string g_kill_at;  // set by the host before any write

bool injected_failure() {
  const long long at = g_fail_write_at.load();
  return at > 0 && ++g_writes == at;
}
}  // namespace

void inject_write_failure(long long nth) {
  g_writes = 0;
  g_fail_write_at = nth;
}

void arm_kill_point(const std::string& name) { g_kill_at = name; }

void kill_point(const char* name) {
  if (!g_kill_at.empty() && g_kill_at == name) std::raise(SIGKILL);
}

void write_all(int fd, const void* data, size_t bytes, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  if (injected_failure()) {
    errno = ENOSPC;
    fail(path, ": write failed (", std::strerror(errno), ")");
  }
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, ": write failed (", std::strerror(n < 0 ? errno : EIO), ")");
    p += n;
    bytes -= size_t(n);
  }
}

std::string read_text_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open for reading (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail(path, ": cannot open for reading (it is a folder, not a file)");
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      fail(path, ": read failed (", reason, ")");
    }
    if (n == 0) break;
    text.append(buffer, size_t(n));
  }
  ::close(fd);
  return text;
}

void write_file_atomically(const std::string& path,
                           const std::function<void(const WriteChunk&)>& produce) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string temp =
      (folder / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(temp, ": cannot create (", std::strerror(errno), ")");
  try {
    produce([&](const void* data, size_t bytes) { write_all(fd, data, bytes, path); });
    if (::fsync(fd) != 0) fail(path, ": fsync failed (", std::strerror(errno), ")");
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    fail(path, ": close failed (", std::strerror(errno), ")");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    fail(path, ": rename failed (", reason, ")");
  }
  // The rename is durable only once the folder is; some file systems cannot fsync a folder
  // (EINVAL), which is no failure of this write.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    fail(folder.string(), ": cannot open the folder of ", path, " to sync it (",
         std::strerror(errno), ")");
  const bool synced = ::fsync(dir) == 0 || errno == EINVAL;
  const std::string reason = std::strerror(errno);
  ::close(dir);
  if (!synced) fail(path, ": fsync of its folder failed (", reason, ")");
}

void write_text_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](const WriteChunk& write) { write(text.data(), text.size()); });
}

}  // namespace gattn
