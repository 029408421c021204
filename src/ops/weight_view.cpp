#include "ops/weight_view.h"

namespace gattn {

const char* weight_dtype_name(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::f32:
      return "f32";
    case WeightDtype::bf16:
      return "bf16";
  }
  return "?";
}

int64_t weight_row_bytes(WeightDtype dtype, int64_t cols) {
  return cols * (dtype == WeightDtype::f32 ? 4 : 2);
}

}  // namespace gattn
