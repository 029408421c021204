#include "train/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gattn {

double Schedule::lr(int64_t step) const {
  if (step < warmup_steps) return max_lr * double(step + 1) / double(warmup_steps);
  if (kind == ScheduleKind::cosine) {
    const double span = double(std::max<int64_t>(1, total_steps - warmup_steps));
    const double progress = std::min(1.0, double(step - warmup_steps) / span);
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + std::cos(std::numbers::pi * progress));
  }
  const int64_t decay_start = total_steps - decay_steps;
  if (step < decay_start || decay_steps == 0) return max_lr;
  const double progress = std::min(1.0, double(step - decay_start) / double(decay_steps));
  return max_lr + (min_lr - max_lr) * progress;
}

}  // namespace gattn
