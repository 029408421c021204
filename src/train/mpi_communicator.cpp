#include "train/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>

#include "train/mpi_check.h"
#include "train/mpi_overlapped_reduction.h"
#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

namespace {

// MPI counts are ints: messages go in pieces of at most this many floats.
constexpr int64_t kPiece = int64_t(1) << 28;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(LogSink& log, CollectiveWatchdog::Options watchdog)
      : watchdog_(watchdog, [this, &log](const std::string& message) {
          log.info("gattn: rank ", rank_, " of ", world_, ": ", message, "; ending the job");
          std::_Exit(3);
        }) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) fail("MPI is already initialised in this process");
    int provided = 0;
    // Serialized: the overlapped reduction's thread makes the MPI calls while it runs.
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
    serialized_ = provided >= MPI_THREAD_SERIALIZED;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
  }
  ~MpiCommunicator() override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "MPI_Finalize");
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }

  void reduce_scatter(float* values, int64_t count) override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "the gradients' reduce-scatter");
    const ShardRange mine = shard_range(count, rank_, world_);
    std::vector<AlignedFloats>& received = received_;
    received.resize(size_t(world_));
    Requests requests;
    for (int other = 0; other < world_; ++other) {
      if (other == rank_) continue;
      if (received[size_t(other)].size() < size_t(mine.size()))
        received[size_t(other)].resize(size_t(mine.size()));
      post(requests, received[size_t(other)].data(), mine.size(), other, Direction::receive);
      const ShardRange theirs = shard_range(count, other, world_);
      post(requests, values + theirs.begin, theirs.size(), other, Direction::send);
    }
    wait(requests);
    std::vector<float*> parts(static_cast<size_t>(world_));
    for (int r = 0; r < world_; ++r)
      parts[size_t(r)] = r == rank_ ? values + mine.begin : received[size_t(r)].data();
    tree_sum(parts, mine.size());  // into parts[0]: rank 0's received shard, or ours on rank 0
    if (rank_ != 0) std::copy_n(parts[0], mine.size(), values + mine.begin);
  }

  void all_gather(float* values, int64_t count) override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "an all-gather");
    Requests requests;
    const ShardRange mine = shard_range(count, rank_, world_);
    for (int other = 0; other < world_; ++other) {
      if (other == rank_) continue;
      const ShardRange theirs = shard_range(count, other, world_);
      post(requests, values + theirs.begin, theirs.size(), other, Direction::receive);
      post(requests, values + mine.begin, mine.size(), other, Direction::send);
    }
    wait(requests);
  }

  void gather(const float* mine, float* all, int64_t count, int root) override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "the checkpoint's gather");
    Requests requests;
    const ShardRange own = shard_range(count, rank_, world_);
    if (rank_ != root) {
      post(requests, const_cast<float*>(mine), own.size(), root, Direction::send);
    } else {
      std::copy_n(mine, own.size(), all + own.begin);
      for (int other = 0; other < world_; ++other) {
        if (other == rank_) continue;
        const ShardRange theirs = shard_range(count, other, world_);
        post(requests, all + theirs.begin, theirs.size(), other, Direction::receive);
      }
    }
    wait(requests);
  }

  std::vector<double> all_gather(const std::vector<double>& mine) override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "the losses' all-gather");
    const auto n = int64_t(mine.size());
    std::vector<double> all(mine.size() * size_t(world_));
    std::copy(mine.begin(), mine.end(), all.begin() + rank_ * n);
    Requests requests;
    for (int other = 0; other < world_; ++other) {
      if (other == rank_) continue;
      post(requests, all.data() + other * n, n, MPI_DOUBLE, other, Direction::receive);
      post(requests, const_cast<double*>(mine.data()), n, MPI_DOUBLE, other, Direction::send);
    }
    wait(requests);
    return all;
  }

  int64_t all_max(int64_t value) override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "the stop agreement");
    return exchange_max(value);
  }

  void barrier() override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "a barrier");
    exchange_max(0);
  }
  void checkpoint_written() override {
    const CollectiveWatchdog::Waiting waiting(watchdog_, "the wait for rank 0's checkpoint", 10);
    exchange_max(0);
  }
  void step_done(int64_t step, double seconds) override { watchdog_.step_done(step, seconds); }

  std::unique_ptr<OverlappedReduction> start_reduction(float* values, int64_t count,
                                                       bool gather) override {
    if (!serialized_) return Communicator::start_reduction(values, count, gather);
    return mpi_overlapped_reduction(values, count, gather, rank_, world_, watchdog_, received_);
  }

 private:
  enum class Direction { send, receive };

  // The non-blocking sends and receives of one collective, each with its peer.
  struct Requests {
    std::vector<MPI_Request> handles;
    std::vector<int> peers;
  };

  // Non-blocking sends or receives of `count` values with `peer`, in pieces (the piece index is
  // the tag, so pieces pair up in order).
  static void post(Requests& requests, void* data, int64_t count, MPI_Datatype type, int peer,
                   Direction direction) {
    int size = 0;
    MPI_Type_size(type, &size);
    for (int64_t done = 0, piece = 0; done < count; done += kPiece, ++piece) {
      const int n = int(std::min(kPiece, count - done));
      void* at = static_cast<char*>(data) + done * size;
      MPI_Request request;
      if (direction == Direction::send)
        check_mpi(MPI_Isend(at, n, type, peer, int(piece), MPI_COMM_WORLD, &request), "MPI_Isend");
      else
        check_mpi(MPI_Irecv(at, n, type, peer, int(piece), MPI_COMM_WORLD, &request), "MPI_Irecv");
      requests.handles.push_back(request);
      requests.peers.push_back(peer);
    }
  }
  static void post(Requests& requests, float* data, int64_t count, int peer, Direction direction) {
    post(requests, data, count, MPI_FLOAT, peer, direction);
  }

  // Waits for every request, telling the watchdog after each arrival which ranks it still waits
  // for (their messages are the heartbeats it names when it expires).
  void wait(Requests& requests) {
    std::vector<MPI_Request>& handles = requests.handles;
    std::vector<int> arrived(handles.size());
    for (;;) {
      std::vector<int> silent;
      for (size_t i = 0; i < handles.size(); ++i)
        if (handles[i] != MPI_REQUEST_NULL) silent.push_back(requests.peers[i]);
      if (silent.empty()) break;
      std::sort(silent.begin(), silent.end());
      silent.erase(std::unique(silent.begin(), silent.end()), silent.end());
      watchdog_.waiting_on(std::move(silent));
      int count = 0;
      check_mpi(MPI_Waitsome(int(handles.size()), handles.data(), &count, arrived.data(),
                             MPI_STATUSES_IGNORE),
                "MPI_Waitsome");
      if (count == MPI_UNDEFINED) break;
    }
  }

  // Every rank's value to every other rank (point to point, so a silent rank is named); the
  // largest of them.
  int64_t exchange_max(int64_t value) {
    std::vector<int64_t> theirs(size_t(world_), value);
    Requests requests;
    for (int other = 0; other < world_; ++other) {
      if (other == rank_) continue;
      post(requests, &theirs[size_t(other)], 1, MPI_INT64_T, other, Direction::receive);
      post(requests, &value, 1, MPI_INT64_T, other, Direction::send);
    }
    wait(requests);
    return *std::max_element(theirs.begin(), theirs.end());
  }

  int rank_ = 0, world_ = 1;
  bool serialized_ = false;  // MPI_THREAD_SERIALIZED provided: the reduction may overlap
  // [rank]: its values of this rank's shard in a reduction (kept: a gradient's size is the same
  // at every step, and fresh pages cost more to fault in and zero than to fill over TCP).
  std::vector<AlignedFloats> received_;
  CollectiveWatchdog watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> mpi_communicator(LogSink& log, CollectiveWatchdog::Options watchdog) {
  return std::make_unique<MpiCommunicator>(log, watchdog);
}

void abort_all_ranks(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace gattn
