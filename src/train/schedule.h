// Learning-rate schedules, a pure function of the optimizer step (0-based).
#pragma once
#include <cstdint>

namespace gattn {

enum class ScheduleKind {
  cosine,  // linear warm-up to max_lr, then cosine to min_lr at total_steps
  wsd,     // linear warm-up, constant max_lr, then linear decay to min_lr over decay_steps
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::cosine;
  double max_lr = 1e-3;
  double min_lr = 0;
  int64_t warmup_steps = 0;
  int64_t decay_steps = 0;  // wsd only
  int64_t total_steps = 1;

  // Warm-up: max_lr * (step + 1) / warmup_steps, so the first step is not wasted at lr 0.
  double lr(int64_t step) const;
};

}  // namespace gattn
