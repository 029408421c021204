// One thread count for OpenMP loops and OpenBLAS (built for OpenMP, so they share one pool).
#pragma once
#include <string>

namespace gattn {

// Fails for threads < 1; more threads than available_cores() are clamped. Returns the count set.
int set_num_threads(int threads);
int available_cores();  // the CPUs this process may run on
int num_threads();
std::string blas_core_name();

// Sets the thread count (when threads > 0) for its lifetime and restores the previous one after.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : before_(num_threads()) {
    if (threads > 0) set_num_threads(threads);
  }
  ~ThreadScope() { set_num_threads(before_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int before_;
};

}  // namespace gattn
