#include "io/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace gattn {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open for reading (", std::strerror(errno), ")");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
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
    produce([&](const void* data, size_t bytes) {
      const char* p = static_cast<const char*>(data);
      while (bytes > 0) {
        const ssize_t n = ::write(fd, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(path, ": write failed (", std::strerror(errno), ")");
        p += n;
        bytes -= size_t(n);
      }
    });
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
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_text_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](const WriteChunk& write) { write(text.data(), text.size()); });
}

}  // namespace gattn
