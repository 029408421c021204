#include "model/arena.h"

namespace gattn {

void Arena::plan(float** slot, int64_t floats, std::string name) {
  constexpr int64_t kAlign = kBufferAlignment / sizeof(float);
  slots_.emplace_back(slot, planned_);
  entries_.push_back({std::move(name), floats});
  planned_ += (floats + kAlign - 1) / kAlign * kAlign;
}

void Arena::allocate() {
  storage_.assign(planned_, 0.0f);
  for (auto& [slot, offset] : slots_) *slot = storage_.data() + offset;
}

void Arena::clear() {
  entries_.clear();
  slots_.clear();
  planned_ = 0;
  storage_.clear();
  storage_.shrink_to_fit();
}

}  // namespace gattn
