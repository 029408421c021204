// Deterministic sums over rows without float atomics: each thread owns a stripe of columns and
// walks every item in order, so the result does not depend on the thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace gattn {

// dst[j] += sum over items of the contributions that add(item, j0, j1, acc) puts into
// acc[0 .. j1 - j0) (double accumulators) for the stripe of columns [j0, j1).
template <typename T, typename AddItem>
void column_reduce(T* dst, int width, int64_t items, AddItem add) {
  constexpr int kStripe = 16;
  const int stripes = (width + kStripe - 1) / kStripe;
#pragma omp parallel for schedule(static)
  for (int stripe = 0; stripe < stripes; ++stripe) {
    const int j0 = stripe * kStripe;
    const int j1 = std::min(width, j0 + kStripe);
    double acc[kStripe] = {};
    for (int64_t item = 0; item < items; ++item) add(item, j0, j1, acc);
    for (int j = j0; j < j1; ++j) dst[j] += T(acc[j - j0]);
  }
}

}  // namespace gattn
