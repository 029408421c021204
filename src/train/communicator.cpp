#include "train/communicator.h"

#include "util/error.h"

namespace gattn {

ShardRange shard_range(int64_t count, int rank, int world) {
  const int64_t chunks = (count + kNormChunk - 1) / kNormChunk;
  auto start = [&](int r) { return std::min(count, chunks * r / world * kNormChunk); };
  return {start(rank), start(rank + 1)};
}

void add_values(float* into, const float* from, int64_t count, bool parallel) {
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < count; ++i) into[i] += from[i];
}

void tree_sum(std::vector<float*>& parts, int64_t count, bool parallel) {
  const int n = int(parts.size());
  if (n < 1 || (n & (n - 1)) != 0) fail("tree_sum: ", n, " parts, not a power of two");
  for (int stride = 1; stride < n; stride *= 2)
    for (int left = 0; left < n; left += 2 * stride)
      add_values(parts[left], parts[left + stride], count, parallel);
}

namespace {
// Communicator::start_reduction's: the whole reduction in finish().
class ReductionAtFinish final : public OverlappedReduction {
 public:
  ReductionAtFinish(Communicator& comm, float* values, int64_t count, bool gather)
      : comm_(comm), values_(values), count_(count), gather_(gather) {}
  void ready(const std::vector<ShardRange>&) override {}
  void finish() override {
    comm_.reduce_scatter(values_, count_);
    if (gather_) comm_.all_gather(values_, count_);
  }

 private:
  Communicator& comm_;
  float* values_;
  int64_t count_;
  bool gather_;
};
}  // namespace

std::unique_ptr<OverlappedReduction> Communicator::start_reduction(float* values, int64_t count,
                                                                   bool gather) {
  return std::make_unique<ReductionAtFinish>(*this, values, count, gather);
}

Communicator& local_communicator() {
  static LocalCommunicator local;
  return local;
}

}  // namespace gattn
