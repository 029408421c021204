// What gattn serve counts for /metrics (Prometheus text exposition format 0.0.4): requests by
// endpoint and status, prompt and generated tokens, and latency histograms (time to first
// token, time per output token). Thread-safe: the scheduler and HTTP workers record, /metrics
// reads.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gattn {

// A cumulative histogram with fixed upper bounds (seconds), as Prometheus keeps them.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // The _bucket, _sum and _count lines of metric `name`, with HELP and TYPE.
  std::string text(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bound, not cumulative; one more for +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

class ServeMetrics {
 public:
  ServeMetrics();
  void request(const std::string& endpoint, int status);
  void prompt_tokens(int64_t n);
  void first_token(double seconds_since_submission);
  void next_token(double seconds_since_previous);
  // Every metric kept here, then `gauges_and_counters` (lines made by the caller: queue, slots,
  // connections) inserted before the histograms.
  std::string text(const std::string& gauges_and_counters) const;

 private:
  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  Histogram ttft_, per_token_;
};

// One metric's HELP, TYPE and value line (no labels).
std::string metric_line(const std::string& name, const std::string& type, const std::string& help,
                        double value);

}  // namespace gattn
