#include "serve/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/batched_infer_state.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

bool Job::wait(JobProgress& progress, std::chrono::milliseconds wait) {
  std::unique_lock lock(m_);
  cv_.wait_for(lock, wait,
               [&] { return finished_ || !pending_.text.empty() || !pending_.logprobs.empty(); });
  progress.text += pending_.text;
  progress.logprobs.insert(progress.logprobs.end(), pending_.logprobs.begin(),
                           pending_.logprobs.end());
  pending_ = {};
  return finished_;
}

void Job::append(std::string_view text, const TokenLogprob* logprob) {
  if (text.empty() && !logprob) return;
  {
    std::lock_guard lock(m_);
    pending_.text += text;
    if (logprob) pending_.logprobs.push_back(*logprob);
  }
  cv_.notify_all();
}

void Job::finish(JobOutcome outcome) {
  {
    std::lock_guard lock(m_);
    outcome_ = std::move(outcome);
    finished_ = true;
  }
  cv_.notify_all();
}

namespace {
// log softmax of one row of logits, in double.
std::vector<float> log_softmax(std::span<const float> logits) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - top);
  const double lse = top + std::log(sum);
  std::vector<float> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = float(logits[i] - lse);
  return out;
}

TokenLogprob score(std::span<const float> logprobs, uint32_t token, int top) {
  TokenLogprob t{.token = token, .logprob = logprobs[token]};
  std::vector<uint32_t> order(logprobs.size());
  std::iota(order.begin(), order.end(), 0u);
  const int k = std::min<int>(top, int(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](uint32_t a, uint32_t b) { return logprobs[a] > logprobs[b]; });
  for (int i = 0; i < k; ++i) t.top.emplace_back(order[i], logprobs[order[i]]);
  return t;
}
}  // namespace

struct Scheduler::Model {
  BatchedInferState state;
  std::vector<float> logits;
};

struct Scheduler::Slot {
  int index = 0;
  std::shared_ptr<Job> job;  // null: free
  std::vector<int32_t> ids;  // the prompt
  int prefilled = 0;
  std::optional<Continuation> continuation;  // once the prompt is in the cache
  std::string new_text;                      // the text of the token being taken
  std::vector<TokenLogprob> prompt_logprobs, logprobs;
  std::optional<JobOutcome> failure;
  std::optional<SteadyClock::time_point> last_token;  // when the job's last token was taken
  int32_t next_id = 0;                                // the token a pass feeds it (decoding)
  bool looked_up = false;                             // the prefix cache was asked for the prompt
  int saved_to = 0;  // where the slot's chain of pieces in the prefix cache ends
  bool prefilling() const { return job && !continuation && !failure && !job->cancelled(); }

  bool decoding() const { return continuation && !continuation->done() && !failure; }
  void clear() {
    job.reset();
    ids.clear();
    prefilled = 0;
    continuation.reset();
    new_text.clear();
    prompt_logprobs.clear();
    logprobs.clear();
    failure.reset();
    last_token.reset();
    looked_up = false;
    saved_to = 0;
  }
};

Scheduler::Scheduler(const Weights& weights, const Tokenizer& tokenizer,
                     const SchedulerOptions& options)
    : w_(weights), tokenizer_(tokenizer), o_(options), prefix_cache_(options.prefix_cache_bytes) {
  if (o_.parallel < 1) fail("serve: --parallel must be at least 1, got ", o_.parallel);
  if (o_.timeout_s <= 0) fail("serve: the time limit must be positive, got ", o_.timeout_s);
  if (!(o_.decode_slowdown >= 1))
    fail("serve: --decode-slowdown must be at least 1, got ", o_.decode_slowdown);
  model_.reset(new Model{.state = {w_, o_.parallel, o_.context, o_.prefill_chunk, o_.keys_values},
                         .logits = {}});
  ExecContext exec = o_.exec;
  exec.profile = &pass_profile_;  // attention's share of each pass (PassCost)
  model_->state.set_exec(exec);
  for (int i = 0; i < o_.parallel; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->index = i;
  }
  // OpenMP's thread count is per thread: the scheduler's passes use the creator's.
  thread_ = std::thread([this, threads = num_threads()] {
    set_num_threads(threads);
    loop();
  });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  const JobOutcome stopped{.error_status = 503, .error = "the server is shutting down"};
  for (auto& slot : slots_)
    if (slot->job) slot->job->finish(stopped);
  for (auto& job : queue_) job->finish(stopped);
}

std::shared_ptr<Job> Scheduler::submit(JobSpec spec) {
  const auto limit = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(o_.timeout_s));
  auto job = std::make_shared<Job>(std::move(spec), SteadyClock::now() + limit);
  {
    std::lock_guard lock(m_);
    queue_.push_back(job);
    stats_.queued = int(queue_.size());
  }
  cv_.notify_all();
  return job;
}

int64_t Scheduler::decode_memory_bytes() const { return model_->state.decode_memory_bytes(); }

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(m_);
  return stats_;
}

int Scheduler::busy_slots() const {
  return int(
      std::count_if(slots_.begin(), slots_.end(), [](auto& s) { return s->job != nullptr; }));
}

JobOutcome Scheduler::timeout_outcome() const {
  return {.error_status = 408,
          .error = cat("the request exceeded the server's time limit of ", o_.timeout_s, " s")};
}

JobOutcome Scheduler::cancelled_outcome() {
  return {.error_status = 499, .error = "the client closed the connection"};
}

bool Scheduler::admit() {
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || busy_slots() > 0; });
  if (stopping_) return false;
  const auto now = SteadyClock::now();
  for (auto& slot : slots_) {
    while (!slot->job && !queue_.empty()) {
      std::shared_ptr<Job> job = std::move(queue_.front());
      queue_.pop_front();
      if (job->cancelled()) {  // its client left while it waited
        job->finish(cancelled_outcome());
        ++stats_.cancelled;
      } else if (now > job->deadline()) {
        job->finish(timeout_outcome());
        ++stats_.timed_out;
      } else {
        slot->job = std::move(job);
        slot->ids.assign(slot->job->spec().prompt.begin(), slot->job->spec().prompt.end());
        if (o_.metrics) o_.metrics->prompt_tokens(int64_t(slot->ids.size()));
      }
    }
  }
  stats_.queued = int(queue_.size());
  stats_.active = busy_slots();
  return true;
}

void Scheduler::loop() {
  while (admit()) {
    step();
    retire();
  }
}

void Scheduler::guarded(Slot& slot, const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& e) {  // bad numbers in this job, a bug, an exhausted resource
    slot.failure = JobOutcome{.error_status = 500, .error = e.what()};
  } catch (...) {
    slot.failure = JobOutcome{.error_status = 500, .error = "unknown error"};
  }
}

// Prompts with at most this many tokens left are not cut into chunks beside decoding slots
// where running them whole keeps a pass within short_prompt_slowdown times a decode-only one.
// (The tail of a long prompt is cut: its last 31 tokens at position ~4,065 of the 0.6B shape
// cost 0.8 s in one pass.)
constexpr int kShortPrompt = 32;

namespace {
// The query-key pairs of n rows from position p on: (p + 1) + ... + (p + n).
int64_t query_key_pairs(int64_t n, int64_t p) { return n * p + n * (n + 1) / 2; }
}  // namespace

// How many prompt tokens the next pass may carry for a prompt with `left` tokens from `position`
// on. Alone, a full chunk; beside decoding slots, as many as keep the pass within
// decode_slowdown times a decode-only pass, from the measured cost of passes: their rows, and
// attention's query-key pairs of the decoding slots (decode_pairs) and of the prompt's tokens (at
// least one token, so a prompt always advances), or a short prompt whole (kShortPrompt) where its
// pass stays within short_prompt_slowdown times a decode-only one. Where
// more prompts wait than slots decode, each waiting prompt may slow the decoders that much: a
// burst of new requests does not wait behind a few decoding ones.
int Scheduler::prefill_budget(int decoding, int waiting, int64_t decode_pairs, int position,
                              int left) const {
  if (!decoding) return o_.prefill_chunk;
  const int whole = left <= kShortPrompt ? std::min(left, o_.prefill_chunk) : 1;
  // (until a pass beside decoding slots was measured)
  if (!rows_cost_.ready() || !attention_cost_.ready()) return whole;
  const double per_pair = attention_cost_.per_unit();
  const double decode_rows = rows_cost_.seconds(decoding);
  const double decode_pass = decode_rows + attention_cost_.seconds(double(decode_pairs));
  const double share = std::max(1.0, double(waiting) / decoding);
  const double room = (o_.decode_slowdown - 1) * share * decode_pass;
  auto extra = [&](int n) {
    return std::max(0.0, rows_cost_.seconds(decoding + n) - decode_rows) +
           per_pair * double(query_key_pairs(n, position));
  };
  int n = 1;
  while (n < o_.prefill_chunk && extra(n + 1) <= room) ++n;
  const double short_room = std::max(room, (o_.short_prompt_slowdown - 1) * decode_pass);
  if (whole > n && extra(whole) <= short_room) return whole;
  return n;
}

// One ragged pass: every decoding slot's next token and, within the budget, chunks of the
// prompts waiting (short ones, then oldest first; a chunk never crosses the prefill_chunk grid, so
// a prompt's chunks are those of prefilling it alone when nothing decodes).
void Scheduler::step() {
  std::vector<Slot*> batch;
  std::vector<BatchedInferState::Chunk> chunks;
  for (auto& slot : slots_)
    if (slot->job && slot->decoding() && !slot->job->cancelled()) {
      slot->next_id = int32_t(slot->continuation->last());
      batch.push_back(slot.get());
      chunks.push_back({.slot = slot->index, .ids = &slot->next_id, .count = 1});
    }
  const int decoding = int(chunks.size());
  int64_t pairs = 0;  // attention's query-key pairs in this pass
  for (const auto& chunk : chunks) pairs += model_->state.length(chunk.slot) + 1;
  const int64_t decode_pairs = pairs;
  std::vector<Slot*> waiting;
  for (auto& slot : slots_)
    if (slot->prefilling()) {
      if (!slot->looked_up) guarded(*slot, [&] { reuse_prefix(*slot); });
      waiting.push_back(slot.get());
    }
  // Short prompts first (they cost a pass little, and a new request must not wait behind a long
  // prompt's whole prefill), then oldest first.
  auto left = [](const Slot* slot) { return int(slot->ids.size()) - slot->prefilled; };
  auto is_long = [&](const Slot* slot) { return left(slot) > kShortPrompt; };
  std::stable_sort(waiting.begin(), waiting.end(), [&](const Slot* a, const Slot* b) {
    if (is_long(a) != is_long(b)) return is_long(b);
    return a->job->submitted() < b->job->submitted();
  });
  int budget = waiting.empty() ? 0
                               : prefill_budget(decoding, int(waiting.size()), decode_pairs,
                                                waiting[0]->prefilled, left(waiting[0])),
      prompt_tokens = 0, rows = decoding;  // rows: of logits
  for (Slot* slot : waiting) {
    if (budget == 0) break;
    const int to_grid = o_.prefill_chunk - slot->prefilled % o_.prefill_chunk;
    const int n = std::min({budget, left(slot), to_grid});
    batch.push_back(slot);
    // (logits only where the prompt ends, or of every token for its scores)
    chunks.push_back({.slot = slot->index,
                      .ids = slot->ids.data() + slot->prefilled,
                      .count = n,
                      .every_row = slot->job->spec().prompt_logprobs,
                      .logits = n == left(slot)});
    budget -= n;
    prompt_tokens += n;
    pairs += query_key_pairs(n, slot->prefilled);
    rows += BatchedInferState::logits_rows(chunks.back());
  }
  if (chunks.empty()) return;
  const int V = w_.config().vocab_size;
  model_->logits.resize(size_t(rows) * V);
  pass_profile_.clear();  // this pass's ops only (a pass that threw left its own)
  const auto start = SteadyClock::now();
  try {
    model_->state.forward(chunks, model_->logits.data());
  } catch (const std::exception& e) {  // one pass for them all: each of its jobs fails
    for (Slot* slot : batch) slot->failure = JobOutcome{.error_status = 500, .error = e.what()};
    return;
  }
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  double attention = 0;
  for (const auto& [op, op_seconds] : pass_profile_.totals())
    if (op.starts_with("attention")) attention += op_seconds;
  // Every pass's rows (a pass of a whole prompt chunk prices the counts between it and the
  // decoding passes); attention's line only beside decoding slots, whose passes it budgets (a
  // whole chunk's attention runs at a far lower cost per query-key pair than a few rows').
  rows_cost_.record(decoding + prompt_tokens, seconds - attention);
  if (decoding > 0) attention_cost_.record(attention, double(pairs));
  {
    std::lock_guard lock(m_);
    ++stats_.passes;
    if (decoding > 0 && prompt_tokens > 0) ++stats_.mixed_passes;
  }
  std::span<float> out(model_->logits);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int n = BatchedInferState::logits_rows(chunks[i]);
    const std::span<float> logits = out.subspan(0, size_t(n) * V);
    out = out.subspan(size_t(n) * V);
    if (int(i) < decoding)
      guarded(*batch[i], [&] { take_token(*batch[i], logits); });
    else
      guarded(*batch[i], [&] { prefilled(*batch[i], chunks[i].count, logits); });
  }
}

// Starts the slot's prompt from the longest prefix the cache has (not for prompts whose every
// token is scored: each needs its logits; and one token at least is left to run).
void Scheduler::reuse_prefix(Slot& slot) {
  slot.looked_up = true;
  if (o_.prefix_cache_bytes == 0 || slot.job->spec().prompt_logprobs) return;
  const std::vector<uint32_t>& prompt = slot.job->spec().prompt;
  const PrefixMatch match =
      prefix_cache_.find(prompt, int(prompt.size()) - 1, model_->state.memory_cuttable());
  for (const PrefixPiece* piece : match.chain)
    model_->state.load(slot.index, piece->to, std::min(piece->to, match.length),
                       piece->memory.data(), int64_t(piece->memory.size()));
  slot.prefilled = model_->state.length(slot.index);
  // A piece used up to a position inside it is not a chain end: the next piece starts from the
  // last whole one.
  slot.saved_to = match.chain.empty() || match.chain.back()->to == match.length
                      ? slot.prefilled
                      : match.chain.back()->from;
  std::lock_guard lock(m_);
  stats_.prefix_cache = prefix_cache_.stats();
}

// Keeps the slot's memory since its last piece, for the sequence of `tokens` (all of them in
// the slot's memory).
void Scheduler::save_prefix(Slot& slot, std::span<const uint32_t> tokens) {
  const int to = int(tokens.size());
  if (o_.prefix_cache_bytes == 0 || to <= slot.saved_to) return;
  GATTN_ASSERT(model_->state.length(slot.index) == to);
  if (!prefix_cache_.contains(tokens, to)) {
    std::vector<float> piece =
        piece_memory_.take(size_t(model_->state.saved_floats(slot.index, slot.saved_to)));
    model_->state.save(slot.index, slot.saved_to, piece);
    prefix_cache_.insert(tokens, slot.saved_to, to, std::move(piece));
  }
  slot.saved_to = to;
  std::lock_guard lock(m_);
  stats_.prefix_cache = prefix_cache_.stats();
}

// After a pass carried `count` prompt tokens of the slot: scores them when asked (echo with
// logprobs), and takes the first token once the prompt is whole.
void Scheduler::prefilled(Slot& slot, int count, std::span<float> logits) {
  const JobSpec& spec = slot.job->spec();
  const int V = w_.config().vocab_size, total = int(slot.ids.size());
  if (spec.prompt_logprobs) {
    if (slot.prefilled == 0) slot.prompt_logprobs.push_back({.token = uint32_t(slot.ids[0])});
    for (int r = 0; r < count && slot.prefilled + r + 1 < total; ++r) {
      const auto row = logits.subspan(size_t(r) * V, V);
      check_finite_logits(row, size_t(slot.prefilled + r + 1));  // no NaN scores
      const auto lp = log_softmax(row);
      slot.prompt_logprobs.push_back(
          score(lp, uint32_t(slot.ids[slot.prefilled + r + 1]), std::max(spec.logprobs, 0)));
    }
  }
  slot.prefilled += count;
  if (slot.prefilled % o_.prefill_chunk == 0)
    save_prefix(slot, std::span(slot.job->spec().prompt).first(size_t(slot.prefilled)));
  if (slot.prefilled == total) start_decoding(slot, logits.subspan(logits.size() - V, V));
}

void Scheduler::start_decoding(Slot& slot, std::span<float> logits) {
  const std::shared_ptr<Job> job = slot.job;
  slot.continuation.emplace(tokenizer_, job->spec().prompt, job->spec().options,
                            [&slot](std::string_view text) { slot.new_text += text; });
  if (!slot.continuation->done()) take_token(slot, logits);
}

// Samples the slot's next token and hands the job its text and score together.
void Scheduler::take_token(Slot& slot, std::span<float> logits) {
  const JobSpec& spec = slot.job->spec();
  if (spec.on_logits) spec.on_logits(logits);
  const int top = spec.logprobs;
  std::vector<float> lp;
  if (top >= 0) lp = log_softmax(logits);
  slot.continuation->next(logits);
  const TokenLogprob* scored = nullptr;
  if (top >= 0) {
    slot.logprobs.push_back(score(lp, slot.continuation->tokens().back(), top));
    if (!slot.continuation->end_token()) scored = &slot.logprobs.back();
  }
  slot.job->append(slot.new_text, scored);
  slot.new_text.clear();
  const auto now = SteadyClock::now();
  if (o_.metrics) {
    const auto since = now - slot.last_token.value_or(slot.job->submitted());
    const double seconds = std::chrono::duration<double>(since).count();
    slot.last_token ? o_.metrics->next_token(seconds) : o_.metrics->first_token(seconds);
  }
  slot.last_token = now;
}

// Frees the slots of jobs that finished, were cancelled, failed or ran out of time.
void Scheduler::retire() {
  const auto now = SteadyClock::now();
  for (auto& slot : slots_) {
    if (!slot->job) continue;
    int64_t SchedulerStats::*counter = nullptr;
    std::optional<JobOutcome> outcome = ending(*slot, now, counter);
    if (!outcome) continue;
    const std::shared_ptr<Job> job = slot->job;
    model_->state.reset(slot->index);
    slot->clear();
    {  // counted before the client can see the end
      std::lock_guard lock(m_);
      ++(stats_.*counter);
      stats_.active = busy_slots();
    }
    job->finish(std::move(*outcome));
  }
}

// How the slot's job ends now (and which count it adds to), if it does: it failed, its client
// left, it finished (then its conversation goes into the prefix cache) or ran out of time.
std::optional<JobOutcome> Scheduler::ending(Slot& slot, SteadyClock::time_point now,
                                            int64_t SchedulerStats::*& counter) {
  const Job& job = *slot.job;
  if (slot.failure) {
    counter = &SchedulerStats::failed;
    return *slot.failure;
  }
  if (job.cancelled()) {
    counter = &SchedulerStats::cancelled;
    return cancelled_outcome();
  }
  if (slot.continuation && slot.continuation->done()) {
    const Continuation& c = *slot.continuation;
    std::vector<uint32_t> fed = job.spec().prompt;  // the conversation so far
    const size_t generated = size_t(model_->state.length(slot.index)) - fed.size();
    fed.insert(fed.end(), c.tokens().begin(), c.tokens().begin() + generated);
    guarded(slot, [&] { save_prefix(slot, fed); });
    counter = &SchedulerStats::completed;
    return JobOutcome{.text = c.text(),
                      .finish_reason = c.finish_reason(),
                      .tokens = c.tokens(),
                      .prompt_logprobs = std::move(slot.prompt_logprobs),
                      .logprobs = std::move(slot.logprobs),
                      .end_token = c.end_token()};
  }
  if (now > job.deadline()) {
    counter = &SchedulerStats::timed_out;
    return timeout_outcome();
  }
  return std::nullopt;
}

}  // namespace gattn
