#include "train/gradient_tree.h"

#include <utility>

namespace gattn {

namespace {
void add_into(Gradients& into, const Gradients& from) {
  float* a = into.data();
  const float* b = from.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < into.size(); ++i) a[i] += b[i];
}
}  // namespace

void GradientTree::add(bool last) {
  size_t level = 0;
  for (; level < pending_.size() && pending_[level]; ++level) {
    add_into(grads_, *pending_[level]);
    spare_.push_back(std::move(pending_[level]));
  }
  if (last) {
    for (; level < pending_.size(); ++level)
      if (pending_[level]) {
        add_into(grads_, *pending_[level]);
        spare_.push_back(std::move(pending_[level]));
      }
    return;
  }
  if (level == pending_.size()) pending_.emplace_back();
  std::unique_ptr<Gradients> held;
  if (spare_.empty()) {
    held = std::make_unique<Gradients>(grads_.size());
  } else {
    held = std::move(spare_.back());
    spare_.pop_back();
  }
  grads_.swap(*held);
  grads_.zero();
  pending_[level] = std::move(held);
}

}  // namespace gattn
