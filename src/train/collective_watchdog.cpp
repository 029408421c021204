#include "train/collective_watchdog.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace gattn {

CollectiveWatchdog::CollectiveWatchdog(Options options,
                                       std::function<void(const std::string&)> expire)
    : options_(options), expire_(std::move(expire)), thread_([this] { watch(); }) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

CollectiveWatchdog::Waiting::Waiting(CollectiveWatchdog& dog, const char* what, double patience)
    : dog_(dog) {
  const std::lock_guard lock(dog_.mutex_);
  dog_.waiting_for_ = what;
  dog_.silent_ranks_.clear();
  dog_.patience_ = patience;
  dog_.since_ = Clock::now();
}

CollectiveWatchdog::Waiting::~Waiting() {
  const std::lock_guard lock(dog_.mutex_);
  dog_.waiting_for_ = nullptr;
}

void CollectiveWatchdog::waiting_on(std::vector<int> ranks) {
  const std::lock_guard lock(mutex_);
  silent_ranks_ = std::move(ranks);
}

void CollectiveWatchdog::step_done(int64_t step, double seconds) {
  const std::lock_guard lock(mutex_);
  step_ = step + 1;
  if (step_seconds_.size() >= 1000) return;  // the first steps suffice
  step_seconds_.push_back(seconds);
  std::vector<double> sorted = step_seconds_;
  const auto middle = sorted.begin() + std::ptrdiff_t(sorted.size() / 2);
  std::nth_element(sorted.begin(), middle, sorted.end());
  median_step_seconds_ = *middle;
}

double CollectiveWatchdog::limit_seconds() const {
  const std::lock_guard lock(mutex_);
  return limit_locked();
}

double CollectiveWatchdog::limit_locked() const {
  return std::max(options_.min_seconds, options_.step_multiple * median_step_seconds_);
}

void CollectiveWatchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    if (stopping_ || !waiting_for_) continue;
    const double waited = std::chrono::duration<double>(Clock::now() - since_).count();
    const double limit = patience_ * limit_locked();
    if (waited <= limit) continue;
    char text[320];
    std::snprintf(text, sizeof text,
                  "watchdog: %s in step %lld has waited %.0f s (limit %.0f s: %g x the larger "
                  "of %.0f s and %.0f x the median step)",
                  waiting_for_, (long long)step_, waited, limit, patience_, options_.min_seconds,
                  options_.step_multiple);
    std::string message = text;
    if (silent_ranks_.empty()) {
      message += "; a rank has stopped or its link is down";
    } else {
      message += "; no word from rank";
      message += silent_ranks_.size() > 1 ? "s " : " ";
      for (size_t i = 0; i < silent_ranks_.size(); ++i)
        message += (i ? ", " : "") + std::to_string(silent_ranks_[i]);
      message += ": stopped, or its link is down";
    }
    lock.unlock();
    expire_(message);
    return;
  }
}

}  // namespace gattn
