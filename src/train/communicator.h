// How the processes of a data-parallel run talk (issue 36; docs/SCALING.md). The canonical
// reduction order lives here: every sum over ranks is a balanced binary tree over rank indices,
// computed once by the owner of each shard and copied to the others, so N ranks give the bits
// of one process accumulating N sub-trees (train/gradient_tree.h). The one-process communicator
// is the identity; train/mpi_communicator.h runs over MPI. Nothing in model/ sees either.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace gattn {

// Values [begin, end) of a buffer: one rank's shard.
struct ShardRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// Gradients are summed for the norm in chunks of this many values (train/adamw.h global_norm), and
// shards start at chunk boundaries, so a sharded norm adds the same chunk sums in the same order.
inline constexpr int64_t kNormChunk = int64_t(1) << 16;

// Rank `rank`'s shard of `count` values split over `world` ranks: whole chunks, as even as can be.
ShardRange shard_range(int64_t count, int rank, int world);

// into[i] += from[i] for i < count (OpenMP over the values unless `parallel` is false: a thread
// beside the computing ones): one node of a tree sum.
void add_values(float* into, const float* from, int64_t count, bool parallel = true);

// parts[0] = the balanced binary tree sum of parts[0..n) (n a power of two), element by element:
// ((p0 + p1) + (p2 + p3)) for n = 4. Every part is overwritten.
void tree_sum(std::vector<float*>& parts, int64_t count, bool parallel = true);

// A reduction of one buffer that goes on while the caller computes (the gradients' reduction
// during the backward pass: train/backward_reduction.h). The caller hands over ranges of the
// buffer as their values become final; finish() returns once the buffer holds what
// reduce_scatter (and, with `gather`, all_gather after it) would have left, bit for bit.
class OverlappedReduction {
 public:
  virtual ~OverlappedReduction() = default;
  // The values of `ranges` (sorted, disjoint) are final on this rank and are not written again
  // until finish(). Every rank hands over the same ranges in the same order, each value once; the
  // ranges of one call may travel together.
  virtual void ready(const std::vector<ShardRange>& ranges) = 0;
  // Every value has been handed over: waits for the reduction's end.
  virtual void finish() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // After it, this rank's shard (shard_range(count, rank, world)) of `values` holds tree_sum of
  // every rank's `values` there; the rest of `values` is left as it was.
  virtual void reduce_scatter(float* values, int64_t count) = 0;
  // Each rank's shard of `values` copied to every rank.
  virtual void all_gather(float* values, int64_t count) = 0;
  // Each rank's shard, held in `mine` (shard_range's size), into `all` (`count` values) on rank
  // `root` alone (elsewhere `all` is not read and may be null): a checkpoint of sharded state.
  virtual void gather(const float* mine, float* all, int64_t count, int root) = 0;
  // `mine` (the same count on every rank) from every rank, in rank order.
  virtual std::vector<double> all_gather(const std::vector<double>& mine) = 0;
  // The largest of the ranks' values (agreeing on a stop: any rank's request stops all).
  virtual int64_t all_max(int64_t value) = 0;
  virtual void barrier() = 0;
  // Every rank waits here until rank 0 has written a checkpoint (a barrier with more patience).
  virtual void checkpoint_written() { barrier(); }
  // reduce_scatter (then all_gather with `gather`) of `values` as an OverlappedReduction. This
  // one waits for finish() and reduces everything then; the MPI communicator's reduces each
  // range as it is handed over.
  virtual std::unique_ptr<OverlappedReduction> start_reduction(float* values, int64_t count,
                                                               bool gather);
  // The trainer's step `step` took `seconds` (what a watchdog scales its limit by).
  virtual void step_done(int64_t /*step*/, double /*seconds*/) {}
};

// The one-process run: rank 0 of 1; every collective leaves its data as it is.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  void reduce_scatter(float*, int64_t) override {}
  void all_gather(float*, int64_t) override {}
  void gather(const float* mine, float* all, int64_t count, int) override {
    if (mine != all) std::copy_n(mine, count, all);
  }
  std::vector<double> all_gather(const std::vector<double>& mine) override { return mine; }
  int64_t all_max(int64_t value) override { return value; }
  void barrier() override {}
};

// A process-wide LocalCommunicator (it has no state).
Communicator& local_communicator();

}  // namespace gattn
