#include "cli/stderr_log.h"

#include <unistd.h>

#include <cstdio>

namespace gattn {

StderrLog::StderrLog() : live_(::isatty(STDERR_FILENO)) {}

void StderrLog::write(LogLevel level, std::string_view message) {
  const int n = int(message.size());
  if (level == LogLevel::progress && live_) {
    std::fprintf(stderr, "\r\033[K%.*s", n, message.data());
    progress_shown_ = true;
    return;
  }
  if (progress_shown_) std::fprintf(stderr, "\r\033[K");
  progress_shown_ = false;
  std::fprintf(stderr, "%s%.*s\n", level == LogLevel::note ? "gattn: note: " : "", n,
               message.data());
}

LogSink& stderr_log() {
  static StderrLog log;
  return log;
}

}  // namespace gattn
