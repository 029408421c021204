#include "train/metrics_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/file.h"
#include "util/error.h"

namespace gattn {

MetricsWriter::MetricsWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, ": cannot open for appending (", std::strerror(errno), ")");
}

MetricsWriter::~MetricsWriter() { ::close(fd_); }

void MetricsWriter::append(const std::string& record) {
  // One write per line: a failure leaves at most a torn last line, which a resume drops.
  const std::string line = record + "\n";
  write_all(fd_, line.data(), line.size(), path_);
}

}  // namespace gattn
