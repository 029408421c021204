#include "ops/gemm_log.h"

#include <atomic>

namespace gattn {

namespace {
std::atomic<GemmLog*> g_log{nullptr};
}

void GemmLog::add(const GemmShape& shape) {
  std::lock_guard lock(mutex_);
  ++calls_[shape];
}

std::map<GemmShape, int64_t> GemmLog::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

void set_gemm_log(GemmLog* log) { g_log = log; }
GemmLog* gemm_log() { return g_log.load(std::memory_order_relaxed); }

}  // namespace gattn
