// Where library code's messages go: the host sets a sink and passes it in (the CLI prints to
// stderr; a server or the Python module routes them elsewhere). Library code never writes to
// stderr itself.
#pragma once
#include <sstream>
#include <string>
#include <string_view>

namespace gattn {

enum class LogLevel {
  progress,  // a status line the next message replaces (redrawn in place on a live terminal)
  info,
  note,  // something the user may want to know about their input
};

class LogSink {
 public:
  virtual ~LogSink() = default;
  // One message, without a trailing newline.
  virtual void write(LogLevel level, std::string_view message) = 0;
  // Whether progress lines are shown in place (a terminal): a caller may then send one every
  // step instead of every few.
  virtual bool live() const { return false; }

  template <typename... Parts>
  void info(const Parts&... parts) {
    write(LogLevel::info, text(parts...));
  }
  template <typename... Parts>
  void note(const Parts&... parts) {
    write(LogLevel::note, text(parts...));
  }

 private:
  template <typename... Parts>
  static std::string text(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
  }
};

// A sink that keeps nothing, for callers with nowhere to report.
LogSink& discard_log();

// Keeps every message (tests; a host that reports them later).
class RecordingLog : public LogSink {
 public:
  void write(LogLevel, std::string_view message) override {
    text_ += message;
    text_ += '\n';
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace gattn
