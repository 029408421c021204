#include "serve/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace gattn {

namespace {
// A sample value as Prometheus reads it: integers without a decimal point, else %.9g.
std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(int64_t(v));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}
std::string header(const std::string& name, const std::string& type, const std::string& help) {
  return cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}
}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  GATTN_ASSERT(std::is_sorted(bounds_.begin(), bounds_.end()));
}

void Histogram::observe(double value) {
  const size_t i =
      size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Histogram::text(const std::string& name, const std::string& help) const {
  std::string out = header(name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += cat(name, "_bucket{le=\"", le, "\"} ", cumulative, "\n");
  }
  return out + cat(name, "_sum ", number(sum_), "\n", name, "_count ", count_, "\n");
}

std::string metric_line(const std::string& name, const std::string& type, const std::string& help,
                        double value) {
  return header(name, type, help) + cat(name, " ", number(value), "\n");
}

ServeMetrics::ServeMetrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      per_token_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}) {}

void ServeMetrics::request(const std::string& endpoint, int status) {
  std::lock_guard lock(m_);
  ++requests_[{endpoint, status}];
}

void ServeMetrics::prompt_tokens(int64_t n) {
  std::lock_guard lock(m_);
  prompt_tokens_ += n;
}

void ServeMetrics::first_token(double seconds) {
  std::lock_guard lock(m_);
  ++generated_tokens_;
  ttft_.observe(seconds);
}

void ServeMetrics::next_token(double seconds) {
  std::lock_guard lock(m_);
  ++generated_tokens_;
  per_token_.observe(seconds);
}

std::string ServeMetrics::text(const std::string& gauges_and_counters) const {
  std::lock_guard lock(m_);
  std::string out = header("gattn_requests_total", "counter",
                           "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    out += cat("gattn_requests_total{endpoint=\"", key.first, "\",status=\"", key.second, "\"} ", n,
               "\n");
  out += metric_line("gattn_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
                     double(prompt_tokens_));
  out += metric_line("gattn_generated_tokens_total", "counter", "Tokens generated.",
                     double(generated_tokens_));
  out += gauges_and_counters;
  out += ttft_.text("gattn_time_to_first_token_seconds",
                    "From a request's arrival to its first generated token.");
  out += per_token_.text("gattn_time_per_output_token_seconds",
                         "Between consecutive generated tokens of a request.");
  return out;
}

}  // namespace gattn
