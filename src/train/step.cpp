#include "train/step.h"

#include <cmath>
#include <optional>
#include <vector>

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

// The step's loss from every rank's [nats, targets] per micro-batch (`per_rank` values each,
// the last of them not a loss), added in micro-batch order as one process adds them.
LossSum step_loss(const std::vector<double>& all, size_t per_rank) {
  LossSum loss;
  for (size_t first = 0; first < all.size(); first += per_rank)
    for (size_t i = 0; i + 1 < per_rank; i += 2) {
      loss.nats += all[first + i];
      loss.tokens += int64_t(all[first + i + 1]);
    }
  return loss;
}

}  // namespace

StepResult optimizer_step(Weights& weights, TrainState& state, AdamW& optimizer, const StepBatch& b,
                          double lr, double grad_clip, const RouterLoss& router,
                          Communicator& comm) {
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
  if (router.coef > 0 && c.has_moe_layers()) {
    if (comm.world() > 1)
      fail("data-parallel training of MoE models with a router loss is not supported yet");
    balance.emplace(c.num_experts, router.coef, 1.0 / b.micro_batches);
  }
  const BalanceScope scope(state, balance ? &*balance : nullptr);
  if (balance && router.scope == RouterLossScope::global && b.micro_batches > 1) {
    for (int micro = 0; micro < b.micro_batches; ++micro)
      state.forward(micro_batch(micro, nullptr));
    balance->freeze();
  }
  state.zero_grads();
  GradientTree tree(state.grads());
  // Nats and targets of each micro-batch of the block, then max_abs_hidden of its last.
  std::vector<double> sums;
  for (int i = 0; i < block.count; ++i) {
    const LossSum part =
        state.forward_backward(micro_batch(block.first + i, b.targets), 1.0f / float(step_targets));
    sums.insert(sums.end(), {part.nats, double(part.tokens)});
    tree.add(i + 1 == block.count);
  }
  sums.push_back(state.max_abs_hidden());
  Gradients& grads = state.grads();
  comm.reduce_scatter(grads.data(), grads.size());
  const bool zero1 = optimizer.sharded();  // the update of this rank's shard alone
  if (zero1 &&
      optimizer.shard().begin != shard_range(grads.size(), comm.rank(), comm.world()).begin)
    fail("optimizer_step: the optimizer's shard is not this rank's");
  if (!zero1) comm.all_gather(grads.data(), grads.size());
  const std::vector<double> all = comm.all_gather(sums);
  const LossSum loss = step_loss(all, sums.size());
  StepResult r;
  r.max_abs_hidden = all.back();  // the last micro-batch's, on the last rank
  r.loss = loss.nats / double(loss.tokens);
  if (balance) r.router_aux_loss = balance->loss();
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
