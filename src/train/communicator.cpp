#include "train/communicator.h"

#include "util/error.h"

namespace gattn {

ShardRange shard_range(int64_t count, int rank, int world) {
  const int64_t chunks = (count + kNormChunk - 1) / kNormChunk;
  auto start = [&](int r) { return std::min(count, chunks * r / world * kNormChunk); };
  return {start(rank), start(rank + 1)};
}

void add_values(float* into, const float* from, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) into[i] += from[i];
}

void tree_sum(std::vector<float*>& parts, int64_t count) {
  const int n = int(parts.size());
  if (n < 1 || (n & (n - 1)) != 0) fail("tree_sum: ", n, " parts, not a power of two");
  for (int stride = 1; stride < n; stride *= 2)
    for (int left = 0; left < n; left += 2 * stride)
      add_values(parts[left], parts[left + stride], count);
}

Communicator& local_communicator() {
  static LocalCommunicator local;
  return local;
}

}  // namespace gattn
