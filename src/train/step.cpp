#include "train/step.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "train/backward_reduction.h"
#include "train/gradient_tree.h"
#include "util/error.h"

namespace gattn {

namespace {

// Unsets the state's router balance however the step ends.
struct BalanceScope {
  BalanceScope(TrainState& s, RouterBalance* balance) : state(s) { s.set_router_balance(balance); }
  ~BalanceScope() { state.set_router_balance(nullptr); }
  TrainState& state;
};

// Sets the state's gradient listener for one pass.
struct ReadyScope {
  ReadyScope(TrainState& s, GradientReady* ready) : state(s) { s.set_gradient_ready(ready); }
  ~ReadyScope() { state.set_gradient_ready(nullptr); }
  TrainState& state;
};

// Rank r's block of micro-batches: [first, first + count).
struct MicroBatchBlock {
  int first, count;
};

// The global norm from this rank's shard of the gradient (ZeRO-1): its chunk sums, all-gathered
// and added in chunk order, as global_norm adds them.
double sharded_global_norm(const Gradients& grads, Communicator& comm) {
  const int world = comm.world();
  const int64_t count = grads.size();
  auto chunks_of = [&](int rank) {
    return std::ptrdiff_t((shard_range(count, rank, world).size() + kNormChunk - 1) / kNormChunk);
  };
  const ShardRange mine = shard_range(count, comm.rank(), world);
  std::vector<double> sums = chunk_square_sums(grads.data() + mine.begin, mine.size());
  const int64_t chunks = (count + kNormChunk - 1) / kNormChunk;
  const size_t most = size_t((chunks + world - 1) / world);  // no shard has more chunks
  sums.resize(most, 0.0);
  const std::vector<double> all = comm.all_gather(sums);
  std::vector<double> ordered;
  for (int r = 0; r < world; ++r) {
    const auto first = all.begin() + std::ptrdiff_t(size_t(r) * most);
    ordered.insert(ordered.end(), first, first + chunks_of(r));
  }
  return norm_of_chunk_sums(ordered);
}

MicroBatchBlock rank_block(int micro_batches, const Communicator& comm) {
  const int world = comm.world();
  if (world == 1) return {0, micro_batches};
  auto power_of_two = [](int n) { return n > 0 && (n & (n - 1)) == 0; };
  if (!power_of_two(world) || micro_batches % world != 0 || !power_of_two(micro_batches / world))
    fail("data-parallel training: grad_accum (", micro_batches, ") must be the number of ranks (",
         world, ", a power of two) times a power of two");
  const int count = micro_batches / world;
  return {comm.rank() * count, count};
}

// What each micro-batch of a rank's block sends: its nats, targets and router loss (each rank
// then adds the last micro-batch's max_abs_hidden).
constexpr size_t kMicroBatchSums = 3;

// The step's sums from every rank's block (`per_rank` values each), added in micro-batch order
// as one process adds them: the loss, and the router loss of the micro_batch scope.
struct StepSums {
  LossSum loss;
  double router_loss = 0;
};
StepSums step_sums(const std::vector<double>& all, size_t per_rank) {
  StepSums sums;
  for (size_t first = 0; first < all.size(); first += per_rank)
    for (size_t i = 0; i + kMicroBatchSums <= per_rank; i += kMicroBatchSums) {
      sums.loss.nats += all[first + i];
      sums.loss.tokens += int64_t(all[first + i + 1]);
      sums.router_loss += all[first + i + 2];
    }
  return sums;
}

// The global scope's pre-pass: each micro-batch of the rank's block forward, the statistics of
// every micro-batch of the step gathered and added in micro-batch order, then frozen.
void freeze_global_balance(TrainState& state, RouterBalance& balance, MicroBatchBlock block,
                           const std::function<Batch(int)>& micro_batch, Communicator& comm) {
  std::vector<double> mine;
  for (int i = 0; i < block.count; ++i) {
    state.forward(micro_batch(block.first + i));
    const std::vector<double> statistics = balance.take_statistics();
    mine.insert(mine.end(), statistics.begin(), statistics.end());
  }
  const std::vector<double> all = comm.world() == 1 ? mine : comm.all_gather(mine);
  for (size_t at = 0; at < all.size(); at += size_t(balance.statistics_size()))
    balance.add_statistics(all.data() + at);
  balance.freeze();
}

}  // namespace

StepResult optimizer_step(Weights& weights, TrainState& state, AdamW& optimizer, const StepBatch& b,
                          double lr, double grad_clip, const RouterLoss& router, Communicator& comm,
                          bool overlap_reduction) {
  if (&state.weights() != &weights) fail("optimizer_step: the state runs other weights");
  const MicroBatchBlock block = rank_block(b.micro_batches, comm);
  const int64_t rows = int64_t(b.micro_batches) * b.batch;
  const int64_t step_targets = count_targets({b.ids, b.targets, int(rows), b.seq_len});
  auto micro_batch = [&](int micro, const int32_t* targets) {
    const int64_t offset = int64_t(micro) * b.batch * b.seq_len;
    return Batch{b.ids + offset, targets ? targets + offset : nullptr, b.batch, b.seq_len};
  };
  const Config& c = weights.config();
  std::optional<RouterBalance> balance;
  if (router.coef > 0 && c.has_moe_layers())
    balance.emplace(c.num_experts, router.coef, 1.0 / b.micro_batches);
  const BalanceScope scope(state, balance ? &*balance : nullptr);
  if (balance && router.scope == RouterLossScope::global && b.micro_batches > 1)
    freeze_global_balance(
        state, *balance, block, [&](int micro) { return micro_batch(micro, nullptr); }, comm);
  state.zero_grads();
  Gradients& grads = state.grads();
  const bool zero1 = optimizer.sharded();  // the update of this rank's shard alone
  if (zero1 &&
      optimizer.shard().begin != shard_range(grads.size(), comm.rank(), comm.world()).begin)
    fail("optimizer_step: the optimizer's shard is not this rank's");
  GradientTree tree(grads);
  // The last micro-batch's backward pass hands its gradient to the ranks' reduction as it goes
  // (started then: the tree moves the earlier micro-batches' gradients to other storage).
  std::unique_ptr<OverlappedReduction> reduction;
  std::optional<BackwardReduction> backward;
  auto start_reduction = [&] {
    reduction = comm.start_reduction(grads.data(), grads.size(), !zero1);
    backward.emplace(
        weights.layout(), c.vocab_size, c.hidden_size,
        last_micro_batch_ids(b.ids, int64_t(b.batch) * b.seq_len, b.micro_batches, comm.world()),
        tree, grads, *reduction);
  };
  std::vector<double> sums;  // kMicroBatchSums of each micro-batch, then max_abs_hidden of its last
  for (int i = 0; i < block.count; ++i) {
    const bool last = i + 1 == block.count;
    if (last && comm.world() > 1 && overlap_reduction) start_reduction();
    const ReadyScope ready(state, backward ? &*backward : nullptr);
    const LossSum part =
        state.forward_backward(micro_batch(block.first + i, b.targets), 1.0f / float(step_targets));
    const double router_loss = balance && !balance->frozen() ? balance->last_pass_loss() : 0.0;
    sums.insert(sums.end(), {part.nats, double(part.tokens), router_loss});
    if (!backward) tree.add(last);  // else folded range by range as the pass went
  }
  sums.push_back(state.max_abs_hidden());
  StepResult r;
  const auto waited_from = std::chrono::steady_clock::now();
  if (backward) {
    backward->finish();
  } else {
    comm.reduce_scatter(grads.data(), grads.size());
    if (!zero1) comm.all_gather(grads.data(), grads.size());
  }
  r.reduction_wait_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waited_from).count();
  const std::vector<double> all = comm.all_gather(sums);
  const StepSums step = step_sums(all, sums.size());
  r.max_abs_hidden = all.back();  // the last micro-batch's, on the last rank
  r.loss = step.loss.nats / double(step.loss.tokens);
  if (balance) r.router_aux_loss = balance->frozen() ? balance->loss() : step.router_loss;
  zero_frozen_gradients(weights.layout(), grads);
  r.grad_norm = zero1 ? sharded_global_norm(grads, comm) : global_norm(grads);
  r.updated = std::isfinite(r.loss) && std::isfinite(r.grad_norm);
  if (r.updated) {
    if (grad_clip > 0) clip_gradients(grads, r.grad_norm, grad_clip);
    optimizer.step(weights, grads, lr);
    if (zero1) comm.all_gather(weights.data(), weights.layout().total());
  }
  return r;
}

}  // namespace gattn
