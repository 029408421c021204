// Ends a rank whose collective waits too long (issue 36). A rank that stops (SIGSTOP, a hang, a
// lost host) would otherwise hold every other rank in its next collective for ever; with the
// watchdog, the first rank to notice exits non-zero and mpirun ends the job. The limit is
// max(min_seconds, step_multiple x the median step so far).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gattn {

class CollectiveWatchdog {
 public:
  struct Options {
    double min_seconds = 60;
    double step_multiple = 5;
  };
  // `expire` is called once, on the watchdog's thread, with a message naming the collective and
  // the step; it is expected not to return (the communicator's ends the process).
  CollectiveWatchdog(Options options, std::function<void(const std::string&)> expire);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // A collective in progress for the lifetime of the object; `patience` multiplies the limit
  // (a wait for rank 0 to write a checkpoint may take longer than a step).
  class Waiting {
   public:
    Waiting(CollectiveWatchdog& dog, const char* what, double patience = 1);
    ~Waiting();
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    CollectiveWatchdog& dog_;
  };

  // The ranks whose messages the collective in progress still waits for (the heartbeats: each
  // arrival is word from its rank); the expiry message names them.
  void waiting_on(std::vector<int> ranks);
  // Step `step` took `seconds`: the next collectives belong to step + 1.
  void step_done(int64_t step, double seconds);
  double limit_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  void watch();
  double limit_locked() const;

  const Options options_;
  const std::function<void(const std::string&)> expire_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  const char* waiting_for_ = nullptr;  // null: no collective in progress
  std::vector<int> silent_ranks_;      // of the collective in progress
  double patience_ = 1;
  Clock::time_point since_;
  int64_t step_ = 1;
  std::vector<double> step_seconds_;
  double median_step_seconds_ = 0;  // of step_seconds_, kept by step_done
  std::thread thread_;
};

}  // namespace gattn
