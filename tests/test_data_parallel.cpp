// Data-parallel training's canonical order (issue 36): the micro-batch gradient tree, the chunked
// gradient norm, shard ranges, and ranks giving the bits of one process. The ranks here are
// threads of this process sharing memory through a test communicator, so the order is checked in
// every build; tests/cli/data_parallel.sh runs the same through mpirun.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "io/token_shard.h"
#include "model/config.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "train/adamw.h"
#include "train/collective_watchdog.h"
#include "train/communicator.h"
#include "train/evaluate.h"
#include "train/gradient_tree.h"
#include "train/step.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

// The tree of four gradients is ((g0 + g1) + (g2 + g3)); values where the grouping shows.
TEST(GradientTree, CombinesMicroBatchesAsABalancedTree) {
  const float g[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  Gradients grads(1);
  GradientTree tree(grads);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(grads.data()[0], 0.0f) << "each micro-batch starts from zero";
    grads.data()[0] = g[i];
    tree.add(i == 3);
  }
  const volatile float left = g[0] + g[1], right = g[2] + g[3];
  EXPECT_EQ(grads.data()[0], left + right);
  EXPECT_EQ(grads.data()[0], 0.0f);  // one sum after another would give 1
}

TEST(GradientTree, ACountThatIsNoPowerOfTwoFoldsTheLatestFirst) {
  const float g[3] = {1e8f, 1.0f, 1.0f};
  Gradients grads(1);
  GradientTree tree(grads);
  for (int i = 0; i < 3; ++i) {
    grads.data()[0] = g[i];
    tree.add(i == 2);
  }
  const volatile float first_two = g[0] + g[1];
  EXPECT_EQ(grads.data()[0], g[2] + first_two);
}

TEST(GradientTree, OneMicroBatchStaysWhereTheBackwardPassPutIt) {
  Gradients grads(3);
  const float* storage = grads.data();
  grads.data()[1] = 0.5f;
  GradientTree(grads).add(true);
  EXPECT_EQ(grads.data(), storage);
  EXPECT_EQ(grads.data()[1], 0.5f);
}

TEST(TreeSum, AddsPartsInPairsThenPairsOfPairs) {
  std::vector<float> a = {1e8f}, b = {1.0f}, c = {-1e8f}, d = {1.0f};
  std::vector<float*> parts = {a.data(), b.data(), c.data(), d.data()};
  tree_sum(parts, 1);
  EXPECT_EQ(a[0], 0.0f);
  std::vector<float*> three = {a.data(), b.data(), c.data()};
  EXPECT_THROW(tree_sum(three, 1), Error);
}

TEST(ShardRange, ShardsAreWholeNormChunksCoveringEveryValue) {
  for (const int64_t count : {int64_t(1), kNormChunk, 3 * kNormChunk + 5, 10 * kNormChunk})
    for (const int world : {1, 2, 4, 8}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const ShardRange s = shard_range(count, r, world);
        EXPECT_EQ(s.begin, next) << count << " " << world << " " << r;
        EXPECT_TRUE(s.begin % kNormChunk == 0 || s.begin == count);
        next = s.end;
      }
      EXPECT_EQ(next, count);
    }
}

// The norm adds each chunk in order in double, then the chunk sums in order: any thread count.
TEST(GlobalNorm, SumsFixedChunksInOrderAtAnyThreadCount) {
  Gradients grads(3 * kNormChunk + 77);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < grads.size(); ++i) grads.data()[i] = normal(rng);
  double expected_sum = 0;
  for (int64_t begin = 0; begin < grads.size(); begin += kNormChunk) {
    double chunk = 0;
    for (int64_t i = begin; i < std::min(grads.size(), begin + kNormChunk); ++i)
      chunk += double(grads.data()[i]) * grads.data()[i];
    expected_sum += chunk;
  }
  for (const int threads : {1, 2, 3}) {
    const ThreadScope scope(threads);
    EXPECT_EQ(global_norm(grads), std::sqrt(expected_sum)) << threads << " threads";
  }
}

// Ranks as threads of one process: each collective publishes its buffer, waits for every rank,
// reads the others', and waits again before anyone goes on.
struct SharedRanks {
  explicit SharedRanks(int ranks) : world(ranks), sync(ranks), buffers(size_t(ranks)) {}
  const int world;
  std::barrier<> sync;
  std::vector<void*> buffers;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(SharedRanks& shared, int rank) : s_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return s_.world; }

  void reduce_scatter(float* values, int64_t count) override {
    publish(values);
    const ShardRange mine = shard_range(count, rank_, s_.world);
    std::vector<std::vector<float>> copies;
    for (int r = 0; r < s_.world; ++r) {
      const float* theirs = static_cast<const float*>(s_.buffers[size_t(r)]);
      copies.emplace_back(theirs + mine.begin, theirs + mine.end);
    }
    s_.sync.arrive_and_wait();  // all read before any writes
    std::vector<float*> parts;
    for (auto& c : copies) parts.push_back(c.data());
    tree_sum(parts, mine.size());
    std::copy_n(parts[0], mine.size(), values + mine.begin);
    s_.sync.arrive_and_wait();
  }
  void all_gather(float* values, int64_t count) override {
    publish(values);
    for (int r = 0; r < s_.world; ++r) {
      if (r == rank_) continue;
      const ShardRange theirs = shard_range(count, r, s_.world);
      std::copy_n(static_cast<const float*>(s_.buffers[size_t(r)]) + theirs.begin, theirs.size(),
                  values + theirs.begin);
    }
    s_.sync.arrive_and_wait();
  }
  void gather(const float* mine, float* all, int64_t count, int root) override {
    publish(const_cast<float*>(mine));
    if (rank_ == root)
      for (int r = 0; r < s_.world; ++r) {
        const ShardRange theirs = shard_range(count, r, s_.world);
        std::copy_n(static_cast<const float*>(s_.buffers[size_t(r)]), theirs.size(),
                    all + theirs.begin);
      }
    s_.sync.arrive_and_wait();
  }
  std::vector<double> all_gather(const std::vector<double>& mine) override {
    publish(const_cast<std::vector<double>*>(&mine));
    std::vector<double> all;
    for (void* b : s_.buffers) {
      const auto& theirs = *static_cast<const std::vector<double>*>(b);
      all.insert(all.end(), theirs.begin(), theirs.end());
    }
    s_.sync.arrive_and_wait();
    return all;
  }
  int64_t all_max(int64_t value) override {
    publish(&value);
    int64_t max = value;
    for (void* b : s_.buffers) max = std::max(max, *static_cast<const int64_t*>(b));
    s_.sync.arrive_and_wait();
    return max;
  }
  void barrier() override { s_.sync.arrive_and_wait(); }

 private:
  void publish(void* buffer) {
    s_.buffers[size_t(rank_)] = buffer;
    s_.sync.arrive_and_wait();
  }
  SharedRanks& s_;
  const int rank_;
};

// `work` run as each of `world` ranks (threads sharing a ThreadCommunicator); the results in rank
// order.
template <typename Work>
auto run_as_ranks(int world, Work work) {
  SharedRanks shared(world);
  std::vector<decltype(work(local_communicator()))> results(static_cast<size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      ThreadCommunicator comm(shared, r);
      results[size_t(r)] = work(comm);
    });
  for (std::thread& t : ranks) t.join();
  return results;
}

Config tiny_config() {
  Config c;
  c.vocab_size = 48;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 1024;  // over 2 x 65,536 parameters: ZeRO-1 shards on 2 and 4 ranks
  c.max_position_embeddings = 64;
  c.gate.position = GatePosition::sdpa;
  return c;
}

// tiny_config with MoE MLPs in both layers (6 experts, 2 per token, a shared expert), over
// 3 x 65,536 parameters: ZeRO-1 shards on 4 ranks.
Config tiny_moe_config() {
  Config c = tiny_config();
  c.layer_specs = {{.mlp = MlpKind::moe}, {.mlp = MlpKind::moe}};
  c.num_experts = 6;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = 192;
  c.shared_expert_intermediate_size = 32;
  return c;
}

struct StepTrace {
  std::vector<float> weights, first_moment, second_moment;  // the moments of the shard
  int64_t shard_begin = 0;
  std::vector<double> losses, norms, router_losses;
};

// Three optimizer steps of `micro_batches` micro-batches of 2 x 16 tokens, as one rank of `comm`
// (with ZeRO-1: AdamW of the rank's shard).
StepTrace train_three_steps(int micro_batches, Communicator& comm, bool zero1 = false,
                            const Config& config = tiny_config(), RouterLoss router = {}) {
  const ThreadScope threads(1);
  Weights w(config);
  w.init(11);
  TrainState state(w);
  const int64_t total = w.layout().total();
  AdamW optimizer(
      w.layout(), AdamWOptions{},
      zero1 ? std::optional(shard_range(total, comm.rank(), comm.world())) : std::nullopt);
  std::mt19937_64 rng(4);
  const int rows = micro_batches * 2, seq = 16;
  std::vector<int32_t> ids(size_t(rows * seq)), targets(ids.size());
  StepTrace trace;
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = int32_t(rng() % 48), targets[i] = i % 7 == 3 ? -1 : int32_t(rng() % 48);
    const StepResult r =
        optimizer_step(w, state, optimizer, {ids.data(), targets.data(), micro_batches, 2, seq},
                       0.01, 0.5, router, comm);
    trace.losses.push_back(r.loss);
    trace.router_losses.push_back(r.router_aux_loss);
    trace.norms.push_back(r.grad_norm);
  }
  trace.weights.assign(w.values().begin(), w.values().end());
  trace.first_moment.assign(optimizer.first_moment().begin(), optimizer.first_moment().end());
  trace.second_moment.assign(optimizer.second_moment().begin(), optimizer.second_moment().end());
  trace.shard_begin = optimizer.shard().begin;
  return trace;
}

// A rank's trace against one process's: the same weights, losses, norms and moments of its shard.
void expect_same_bits(const StepTrace& rank, const StepTrace& one) {
  EXPECT_EQ(rank.losses, one.losses);
  EXPECT_EQ(rank.norms, one.norms);
  EXPECT_EQ(rank.router_losses, one.router_losses);
  ASSERT_EQ(rank.weights.size(), one.weights.size());
  EXPECT_EQ(std::memcmp(rank.weights.data(), one.weights.data(), one.weights.size() * 4), 0);
  for (auto moment : {&StepTrace::first_moment, &StepTrace::second_moment}) {
    ASSERT_LE(size_t(rank.shard_begin) + (rank.*moment).size(), (one.*moment).size());
    EXPECT_EQ(std::memcmp((rank.*moment).data(), (one.*moment).data() + rank.shard_begin,
                          (rank.*moment).size() * 4),
              0);
  }
}

// (micro-batches, ranks, ZeRO-1)
class RanksGiveOneProcessesBits : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(RanksGiveOneProcessesBits, AfterThreeSteps) {
  const auto [micro_batches, world, zero1] = GetParam();
  const StepTrace one = train_three_steps(micro_batches, local_communicator());
  const std::vector<StepTrace> traces = run_as_ranks(
      world, [&](Communicator& comm) { return train_three_steps(micro_batches, comm, zero1); });
  int64_t moments = 0;
  for (const StepTrace& t : traces) {
    expect_same_bits(t, one);
    moments += int64_t(t.first_moment.size());
  }
  EXPECT_EQ(moments, int64_t(one.first_moment.size()) * (zero1 ? 1 : world));
}

INSTANTIATE_TEST_SUITE_P(MicroBatchesAndRanks, RanksGiveOneProcessesBits,
                         ::testing::Values(std::tuple{2, 2, false}, std::tuple{4, 2, false},
                                           std::tuple{4, 4, false}, std::tuple{8, 2, false},
                                           std::tuple{2, 2, true}, std::tuple{4, 4, true}));

// An evaluation split over `world` ranks (threads here) gives every rank one process's figures
// bit for bit: 13 windows of 16 tokens in batches of 2 (7 batches, the last of one window), so
// 2, 3 and 4 ranks get blocks of unequal size.
class EvaluationSplitOverRanks : public ::testing::TestWithParam<int> {};

TEST_P(EvaluationSplitOverRanks, GivesOneProcessesBits) {
  const int world = GetParam();
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("gattn_dp_eval_" + std::to_string(::getpid()) + "_" + std::to_string(world) + ".bin"))
          .string();
  std::mt19937_64 rng(9);
  std::vector<uint32_t> tokens(13 * 16 + 1);
  for (uint32_t& t : tokens) t = 1 + uint32_t(rng() % 47);
  tokens[0] = 0;  // the document's BOS
  write_token_shard(path, tokens, {0}, 48, 0, 0);
  const std::vector<uint32_t> token_bytes(48, 3);
  const TokenShard shard(path);
  auto evaluate_as = [&](Communicator& comm) {
    const ThreadScope threads(1);
    Weights w(tiny_config());
    w.init(5);
    TrainState state(w);
    return evaluate(state, shard, 16, WindowKind::plain, 13, 2, &token_bytes, comm);
  };
  const EvalResult one = evaluate_as(local_communicator());
  ASSERT_EQ(one.window_loss.size(), 13u);
  const std::vector<EvalResult> results = run_as_ranks(world, evaluate_as);
  std::filesystem::remove(path);
  for (const EvalResult& r : results) {
    EXPECT_EQ(r.loss, one.loss);
    EXPECT_EQ(r.bits_per_byte, one.bits_per_byte);
    EXPECT_EQ(r.tokens, one.tokens);
    EXPECT_EQ(r.bytes, one.bytes);
    EXPECT_EQ(r.windows, one.windows);
    EXPECT_EQ(r.window_loss, one.window_loss);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, EvaluationSplitOverRanks, ::testing::Values(2, 3, 4));

// A MoE model's load-balancing loss over ranks (both scopes): the global scope's statistics are
// gathered per micro-batch and added in micro-batch order, the micro_batch scope's pass losses
// too, so ranks give one process's bits (4 micro-batches on 2 and 4 ranks, ZeRO-1 on 4).
class MoeRanksGiveOneProcessesBits
    : public ::testing::TestWithParam<std::tuple<RouterLossScope, int, bool>> {};

TEST_P(MoeRanksGiveOneProcessesBits, AfterThreeSteps) {
  const auto [scope, world, zero1] = GetParam();
  const RouterLoss router{.coef = 0.05, .scope = scope};
  const StepTrace one =
      train_three_steps(4, local_communicator(), false, tiny_moe_config(), router);
  ASSERT_GT(one.router_losses[0], 0);
  for (const StepTrace& t : run_as_ranks(world, [&](Communicator& comm) {
         return train_three_steps(4, comm, zero1, tiny_moe_config(), router);
       }))
    expect_same_bits(t, one);
}

INSTANTIATE_TEST_SUITE_P(ScopesAndRanks, MoeRanksGiveOneProcessesBits,
                         ::testing::Values(std::tuple{RouterLossScope::global, 2, false},
                                           std::tuple{RouterLossScope::global, 4, true},
                                           std::tuple{RouterLossScope::micro_batch, 2, false},
                                           std::tuple{RouterLossScope::micro_batch, 4, true}));

TEST(DataParallelStep, RefusesRanksThatDoNotSplitTheTree) {
  Weights w(tiny_config());
  w.init(1);
  TrainState state(w);
  AdamW optimizer(w.layout(), AdamWOptions{});
  std::vector<int32_t> ids(3 * 2 * 16, 1), targets(ids.size(), 2);
  SharedRanks two(2);
  // Rank 0 of 2 with 3 micro-batches: refused before any collective (nobody waits for it).
  ThreadCommunicator rank0(two, 0);
  try {
    optimizer_step(w, state, optimizer, {ids.data(), targets.data(), 3, 2, 16}, 0.01, 0.5, {},
                   rank0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grad_accum (3) must be the number of ranks (2"),
              std::string::npos)
        << e.what();
  }
}

// A watchdog of 0.3 s whose expiry is recorded, not fatal.
struct RecordedWatchdog {
  std::atomic<bool> expired = false;
  std::string message;
  CollectiveWatchdog dog{{.min_seconds = 0.3, .step_multiple = 5}, [this](const std::string& m) {
                           message = m;
                           expired = true;
                         }};
  // Waits up to 3 s for the expiry.
  bool expires() {
    for (int i = 0; i < 300 && !expired; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return expired;
  }
};

TEST(CollectiveWatchdog, EndsACollectiveThatWaitsPastItsLimitNamingTheStep) {
  RecordedWatchdog w;
  w.dog.step_done(6, 0.01);
  const CollectiveWatchdog::Waiting waiting(w.dog, "the gradients' reduce-scatter");
  ASSERT_TRUE(w.expires());
  EXPECT_NE(w.message.find("the gradients' reduce-scatter in step 7 has waited"), std::string::npos)
      << w.message;
}

// The ranks whose messages have not arrived (the communicator's heartbeats) are named.
TEST(CollectiveWatchdog, NamesTheRanksItHasNoWordFrom) {
  RecordedWatchdog w;
  const CollectiveWatchdog::Waiting waiting(w.dog, "the stop agreement");
  w.dog.waiting_on({1, 3});
  ASSERT_TRUE(w.expires());
  EXPECT_NE(w.message.find("the stop agreement in step 1 has waited"), std::string::npos)
      << w.message;
  EXPECT_NE(w.message.find("no word from ranks 1, 3: stopped, or its link is down"),
            std::string::npos)
      << w.message;
}

TEST(CollectiveWatchdog, LeavesCollectivesWithinTheLimitAlone) {
  std::atomic<bool> expired = false;
  CollectiveWatchdog dog({.min_seconds = 0.3, .step_multiple = 5},
                         [&](const std::string&) { expired = true; });
  for (int i = 0; i < 60; ++i) {
    const CollectiveWatchdog::Waiting waiting(dog, "a barrier");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // idle: nothing is waiting
  EXPECT_FALSE(expired);
}

TEST(CollectiveWatchdog, TheLimitIsTheLargerOfItsLeastAndAMultipleOfTheMedianStep) {
  CollectiveWatchdog dog({.min_seconds = 60, .step_multiple = 5}, [](const std::string&) {});
  EXPECT_EQ(dog.limit_seconds(), 60);
  for (const double seconds : {30.0, 10.0, 20.0}) dog.step_done(1, seconds);
  EXPECT_EQ(dog.limit_seconds(), 100);  // 5 x the median 20 s
}

}  // namespace
}  // namespace gattn
