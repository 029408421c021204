#include "train/gradient_tree.h"

#include <utility>

#include "train/communicator.h"

namespace gattn {

void GradientTree::fold(size_t level) {
  add_values(grads_.data(), pending_[level]->data(), grads_.size());
  spare_.push_back(std::move(pending_[level]));
}

void GradientTree::add_last(int64_t begin, int64_t end) {
  for (const std::unique_ptr<Gradients>& pending : pending_)  // every level, lowest first
    if (pending) add_values(grads_.data() + begin, pending->data() + begin, end - begin);
}

void GradientTree::end_last() {
  for (std::unique_ptr<Gradients>& pending : pending_)
    if (pending) spare_.push_back(std::move(pending));
}

void GradientTree::add(bool last) {
  size_t level = 0;
  for (; level < pending_.size() && pending_[level]; ++level) fold(level);
  if (last) {
    for (; level < pending_.size(); ++level)
      if (pending_[level]) fold(level);
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
