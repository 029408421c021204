#include "util/op_profile.h"

namespace gattn {

void OpProfile::add(const char* op, double seconds) {
  for (auto& [name, total] : totals_)
    if (name == op) {
      total += seconds;
      return;
    }
  totals_.emplace_back(op, seconds);
}

}  // namespace gattn
