#include "util/log.h"

namespace gattn {

namespace {
class DiscardLog final : public LogSink {
 public:
  void write(LogLevel, std::string_view) override {}
};
}  // namespace

LogSink& discard_log() {
  static DiscardLog log;
  return log;
}

}  // namespace gattn
