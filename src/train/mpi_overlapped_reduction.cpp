#include "train/mpi_overlapped_reduction.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "train/mpi_check.h"
#include "util/aligned.h"

namespace gattn {

namespace {

constexpr int64_t kSegment = int64_t(1) << 22;  // values per message at most
constexpr int kTagBase = 1 << 20;  // above the tags of the other collectives (piece indices)
// Between polls that find nothing the thread sleeps this long (a backoff to 1 ms made the
// reduction's tail longer and the step no faster: docs/SCALING.md).
constexpr auto kIdleSleep = std::chrono::microseconds(20);

class MpiOverlappedReduction final : public OverlappedReduction {
 public:
  MpiOverlappedReduction(float* values, int64_t count, bool gather, int rank, int world,
                         CollectiveWatchdog& watchdog, std::vector<AlignedFloats>& received)
      : values_(values),
        gather_(gather),
        rank_(rank),
        world_(world),
        watchdog_(watchdog),
        received_(received) {
    for (int r = 0; r < world; ++r) shards_.push_back(shard_range(count, r, world));
    const auto shard = size_t(shards_[size_t(rank)].size());
    received_.resize(size_t(world));
    for (int r = 0; r < world; ++r)
      if (r != rank && received_[size_t(r)].size() < shard) received_[size_t(r)].resize(shard);
    thread_ = std::thread([this] { exchange(); });
  }
  ~MpiOverlappedReduction() override {
    if (!thread_.joinable()) return;
    {  // an exception left the pass: the job ends (abort_all_ranks); stop making MPI calls
      const std::lock_guard<std::mutex> lock(mutex_);
      abandoned_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  void ready(const std::vector<ShardRange>& ranges) override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      handed_.push_back(ranges);
    }
    wake_.notify_one();
  }

  void finish() override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "the gradients' reduction");
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      finishing_ = true;
    }
    wake_.notify_one();
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Ranges within one shard, sent to the shard's owner as one message.
  struct Segment {
    std::vector<ShardRange> pieces;  // sorted
    int owner;
    int tag;           // the owner's sum comes back with tag + 1
    int received = 0;  // the owner's: how many other ranks' values have come
  };
  enum class Event { sent_to_owner, part_received, sum_sent, sum_received };
  struct Outstanding {
    size_t segment;
    Event event;
    int peer;
  };

  // The thread's loop: posts what is handed over, and follows each message to its end.
  void exchange() try {
    for (;;) {
      std::vector<std::vector<ShardRange>> groups;
      bool finishing = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (outstanding_count_ == 0)
          wake_.wait(lock, [&] { return !handed_.empty() || finishing_ || abandoned_; });
        if (abandoned_) return;
        groups.swap(handed_);
        finishing = finishing_;
      }
      for (const std::vector<ShardRange>& group : groups) post_group(group);
      if (outstanding_count_ == 0) {
        if (finishing) return;
        continue;
      }
      if (progress()) continue;
      if (++idle_polls_ % 1024 == 0) tell_watchdog();  // the silent ranks, while none arrives
      std::this_thread::sleep_for(kIdleSleep);
    }
  } catch (...) {
    error_ = std::current_exception();
  }

  // A group's values in segments: per owner of a shard, in pieces of at most kSegment values.
  void post_group(const std::vector<ShardRange>& group) {
    for (int owner = 0; owner < world_; ++owner) {
      const ShardRange shard = shards_[size_t(owner)];
      Segment segment{{}, owner, 0, 0};
      int64_t size = 0;
      for (const ShardRange& range : group)
        for (int64_t at = std::max(range.begin, shard.begin);
             at < std::min(range.end, shard.end);) {
          const int64_t end = std::min({range.end, shard.end, at + kSegment - size});
          segment.pieces.push_back({at, end});
          size += end - at;
          at = end;
          if (size == kSegment) {
            post_segment(std::move(segment));
            segment = {{}, owner, 0, 0};
            size = 0;
          }
        }
      if (size > 0) post_segment(std::move(segment));
    }
  }

  void post_segment(Segment segment) {
    segment.tag = kTagBase + 2 * int(segments_.size());
    segments_.push_back(std::move(segment));
    const size_t index = segments_.size() - 1;
    const Segment& s = segments_[index];
    const int64_t origin = s.pieces.front().begin;
    if (s.owner != rank_) {
      message(s, values_ + origin, s.owner, s.tag, Direction::send,
              {index, Event::sent_to_owner, s.owner});
      return;
    }
    for (int other = 0; other < world_; ++other)
      if (other != rank_)
        message(s, received(other) + (origin - shards_[size_t(rank_)].begin), other, s.tag,
                Direction::receive, {index, Event::part_received, other});
  }

  enum class Direction { send, receive };
  // A non-blocking send or receive of the segment's pieces, the first at `first` and the others
  // at their offsets from it (a derived datatype when there are several).
  void message(const Segment& s, float* first, int peer, int tag, Direction direction,
               Outstanding o) {
    const int64_t origin = s.pieces.front().begin;
    MPI_Datatype type = MPI_FLOAT;
    int count = int(s.pieces.front().size());
    if (s.pieces.size() > 1) {
      std::vector<int> lengths;
      std::vector<MPI_Aint> displacements;
      for (const ShardRange& p : s.pieces) {
        lengths.push_back(int(p.size()));
        displacements.push_back(MPI_Aint(p.begin - origin) * MPI_Aint(sizeof(float)));
      }
      check_mpi(MPI_Type_create_hindexed(int(lengths.size()), lengths.data(), displacements.data(),
                                         MPI_FLOAT, &type),
                "MPI_Type_create_hindexed");
      check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
      count = 1;
    }
    if (direction == Direction::send)
      post(MPI_Isend(first, count, type, peer, tag, MPI_COMM_WORLD, slot()), "MPI_Isend", o);
    else
      post(MPI_Irecv(first, count, type, peer, tag, MPI_COMM_WORLD, slot()), "MPI_Irecv", o);
    if (type != MPI_FLOAT) MPI_Type_free(&type);  // the posted message keeps it while it needs it
  }

  // The owner has every rank's values of the segment: their tree sum, sent back to gather.
  void sum(size_t index) {
    const Segment& s = segments_[index];
    const int64_t shard_begin = shards_[size_t(rank_)].begin;
    std::vector<float*> parts(static_cast<size_t>(world_));
    for (const ShardRange& p : s.pieces) {
      for (int r = 0; r < world_; ++r)
        parts[size_t(r)] = r == rank_ ? values_ + p.begin : received(r) + (p.begin - shard_begin);
      tree_sum(parts, p.size(), false);  // into parts[0]: rank 0's values, or ours on rank 0
      if (rank_ != 0) std::copy_n(parts[0], p.size(), values_ + p.begin);
    }
    if (!gather_) return;
    for (int other = 0; other < world_; ++other)
      if (other != rank_)
        message(s, values_ + s.pieces.front().begin, other, s.tag + 1, Direction::send,
                {index, Event::sum_sent, other});
  }

  void arrived(const Outstanding& o) {
    Segment& s = segments_[o.segment];
    switch (o.event) {
      case Event::sent_to_owner:  // our values have left: the sum may come into their place
        if (gather_)
          message(s, values_ + s.pieces.front().begin, s.owner, s.tag + 1, Direction::receive,
                  {o.segment, Event::sum_received, s.owner});
        break;
      case Event::part_received:
        if (++s.received == world_ - 1) sum(o.segment);
        break;
      case Event::sum_sent:
      case Event::sum_received:
        break;
    }
  }

  // One MPI_Testsome over the outstanding messages; false when none had arrived.
  bool progress() {
    int count = 0;
    indices_.resize(handles_.size());
    check_mpi(MPI_Testsome(int(handles_.size()), handles_.data(), &count, indices_.data(),
                           MPI_STATUSES_IGNORE),
              "MPI_Testsome");
    if (count == MPI_UNDEFINED || count == 0) return false;
    outstanding_count_ -= count;
    for (int i = 0; i < count; ++i) arrived(outstanding_[size_t(indices_[size_t(i)])]);
    if (outstanding_count_ * 2 < handles_.size()) compact();
    tell_watchdog();
    return true;
  }

  // Where rank `other`'s values of this rank's shard come (at their offsets in the shard).
  float* received(int other) { return received_[size_t(other)].data(); }

  // A new request's handle, owned by handles_ until it completes.
  MPI_Request* slot() {
    handles_.push_back(MPI_REQUEST_NULL);
    return &handles_.back();
  }
  void post(int code, const char* call, Outstanding o) {
    check_mpi(code, call);
    outstanding_.push_back(o);
    ++outstanding_count_;
  }

  void compact() {
    size_t kept = 0;
    for (size_t i = 0; i < handles_.size(); ++i)
      if (handles_[i] != MPI_REQUEST_NULL) {
        handles_[kept] = handles_[i];
        outstanding_[kept++] = outstanding_[i];
      }
    handles_.resize(kept);
    outstanding_.resize(kept);
  }

  void tell_watchdog() {
    std::vector<int> silent;
    for (size_t i = 0; i < handles_.size(); ++i)
      if (handles_[i] != MPI_REQUEST_NULL) silent.push_back(outstanding_[i].peer);
    std::sort(silent.begin(), silent.end());
    silent.erase(std::unique(silent.begin(), silent.end()), silent.end());
    watchdog_.waiting_on(std::move(silent));
  }

  float* const values_;
  const bool gather_;
  const int rank_, world_;
  CollectiveWatchdog& watchdog_;
  std::vector<AlignedFloats>& received_;  // [rank]: its values of our shard
  std::vector<ShardRange> shards_;

  std::mutex mutex_;  // guards handed_, finishing_, abandoned_
  std::condition_variable wake_;
  std::vector<std::vector<ShardRange>> handed_;  // groups of ranges, in the order handed over
  bool finishing_ = false, abandoned_ = false;

  // The exchange thread's alone:
  std::vector<Segment> segments_;
  std::vector<MPI_Request> handles_;  // [i] pairs with outstanding_[i]; null once complete
  std::vector<Outstanding> outstanding_;
  size_t outstanding_count_ = 0;
  int64_t idle_polls_ = 0;
  std::vector<int> indices_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<OverlappedReduction> mpi_overlapped_reduction(
    float* values, int64_t count, bool gather, int rank, int world, CollectiveWatchdog& watchdog,
    std::vector<AlignedFloats>& received) {
  return std::make_unique<MpiOverlappedReduction>(values, count, gather, rank, world, watchdog,
                                                  received);
}

}  // namespace gattn
