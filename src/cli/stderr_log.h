// The CLI's log sink: every message on stderr; notes prefixed "gattn: note: "; on a terminal a
// progress line is redrawn in place until the next message.
#pragma once
#include "util/log.h"

namespace gattn {

class StderrLog final : public LogSink {
 public:
  StderrLog();
  void write(LogLevel level, std::string_view message) override;
  bool live() const override { return live_; }

 private:
  bool live_;
  bool progress_shown_ = false;  // a progress line without its newline is on the terminal
};

// The process's one StderrLog.
LogSink& stderr_log();

}  // namespace gattn
