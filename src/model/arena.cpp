#include "model/arena.h"

#include <algorithm>

#include "util/error.h"

namespace gattn {

void Arena::plan(float** slot, int64_t floats, std::string name) {
  constexpr int64_t kAlign = kBufferAlignment / sizeof(float);
  slots_.emplace_back(slot, planned_);
  entries_.push_back({std::move(name), floats, sharing_});
  planned_ += (floats + kAlign - 1) / kAlign * kAlign;
}

void Arena::begin_shared() {
  GATTN_ASSERT(!sharing_, "arena: a shared region inside another");
  sharing_ = true;
  shared_start_ = shared_end_ = planned_;
  sharer_entries_ = entries_.size();
  sharer_lists_.clear();
}

// Keeps the current user's entries unless an earlier user listed the same tensors.
void Arena::close_sharer() {
  std::vector<Entry> list(entries_.begin() + int64_t(sharer_entries_), entries_.end());
  entries_.resize(sharer_entries_);
  const auto same = [&](const std::vector<Entry>& other) {
    return std::equal(
        list.begin(), list.end(), other.begin(), other.end(),
        [](const Entry& a, const Entry& b) { return a.name == b.name && a.floats == b.floats; });
  };
  if (std::none_of(sharer_lists_.begin(), sharer_lists_.end(), same))
    sharer_lists_.push_back(std::move(list));
  shared_end_ = std::max(shared_end_, planned_);
  planned_ = shared_start_;
}

void Arena::next_sharer() {
  GATTN_ASSERT(sharing_, "arena: next_sharer() outside a shared region");
  close_sharer();
}

void Arena::end_shared() {
  GATTN_ASSERT(sharing_, "arena: end_shared() outside a shared region");
  close_sharer();
  for (std::vector<Entry>& list : sharer_lists_)
    entries_.insert(entries_.end(), list.begin(), list.end());
  sharer_lists_.clear();
  planned_ = shared_end_;
  sharing_ = false;
}

void Arena::allocate() {
  GATTN_ASSERT(!sharing_, "arena: allocate() inside a shared region");
  storage_.assign(planned_, 0.0f);
  for (auto& [slot, offset] : slots_) *slot = storage_.data() + offset;
}

void Arena::clear() {
  entries_.clear();
  slots_.clear();
  planned_ = 0;
  storage_.clear();
  storage_.shrink_to_fit();
  sharing_ = false;
  sharer_lists_.clear();
}

}  // namespace gattn
