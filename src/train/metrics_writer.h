// metrics.jsonl of a training run: one JSON record per line, appended as the run goes. Every
// write is checked, so a full disk stops the run with an error naming the file instead of
// dropping records silently.
#pragma once
#include <string>

namespace gattn {

class MetricsWriter {
 public:
  explicit MetricsWriter(std::string path);  // appends; creates the file if absent
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Writes `record` and a newline, whole, or throws an Error naming the file.
  void append(const std::string& record);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace gattn
