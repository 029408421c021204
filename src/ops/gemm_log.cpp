#include "ops/gemm_log.h"

namespace gattn {

void GemmLog::add(const GemmShape& shape) {
  std::lock_guard lock(mutex_);
  ++calls_[shape];
}

std::map<GemmShape, int64_t> GemmLog::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

}  // namespace gattn
