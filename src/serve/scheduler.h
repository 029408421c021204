// The server's scheduler: one thread owns the model state and runs every request. HTTP threads
// submit jobs and read their text as it is produced; the scheduler admits up to `parallel` jobs
// into the slots of a BatchedInferState, prefills each prompt in chunks, and runs one decode
// step for all decoding jobs at once (one GEMM per weight over their rows).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "infer/continuation.h"
#include "model/weights.h"
#include "ops/exec_context.h"
#include "serve/metrics.h"
#include "serve/pass_cost.h"
#include "serve/prefix_cache.h"
#include "serve/warm_buffer.h"
#include "tokenizer/tokenizer.h"
#include "util/op_profile.h"

namespace gattn {

using SteadyClock = std::chrono::steady_clock;

struct TokenLogprob {
  uint32_t token = 0;
  std::optional<float> logprob = {};                 // absent for a prompt's first token
  std::vector<std::pair<uint32_t, float>> top = {};  // the most likely tokens there, best first
};

struct JobSpec {
  std::vector<uint32_t> prompt;  // at least one token, all below the model's vocab_size
  ContinuationOptions options;   // max_tokens may be 0 (then only the prompt is scored)
  int logprobs = -1;             // top alternatives reported per token; -1: no logprobs
  bool prompt_logprobs = false;  // also score every prompt token (echo)
  // Tests: sees (and may change, or throw on) each step's logits before the token is sampled.
  std::function<void(std::span<float> logits)> on_logits = {};
};

struct JobOutcome {
  std::string text = {}, finish_reason = {};
  std::vector<uint32_t> tokens = {};
  std::vector<TokenLogprob> prompt_logprobs = {}, logprobs = {};
  bool end_token = false;  // the last token is an end token: not part of the text
  int error_status = 0;    // 0: finished; else the HTTP status of `error` (408, 500, 503)
  std::string error = {};
};

// What a job produced since its reader last looked: text in whole UTF-8 characters, and (with
// logprobs) the scores of the tokens that make up the text, in order.
struct JobProgress {
  std::string text;
  std::vector<TokenLogprob> logprobs;
};

// One request as both sides see it.
class Job {
 public:
  Job(JobSpec spec, SteadyClock::time_point deadline)
      : spec_(std::move(spec)), submitted_(SteadyClock::now()), deadline_(deadline) {}
  const JobSpec& spec() const { return spec_; }
  SteadyClock::time_point submitted() const { return submitted_; }
  SteadyClock::time_point deadline() const { return deadline_; }

  // HTTP side: waits up to `wait` for new text or the end, appends what is new to `progress`,
  // and returns true once the job has finished (then outcome() is final).
  bool wait(JobProgress& progress, std::chrono::milliseconds wait);
  const JobOutcome& outcome() const { return outcome_; }  // once wait() returned true
  void cancel() { cancelled_ = true; }  // the client went away: the scheduler frees the slot
  bool cancelled() const { return cancelled_; }

  // Scheduler side: one token's text (possibly empty: held back) and its score.
  void append(std::string_view text, const TokenLogprob* logprob);
  void finish(JobOutcome outcome);

 private:
  const JobSpec spec_;
  const SteadyClock::time_point submitted_, deadline_;
  std::mutex m_;
  std::condition_variable cv_;
  JobProgress pending_;
  bool finished_ = false;
  JobOutcome outcome_;
  std::atomic<bool> cancelled_ = false;
};

struct SchedulerOptions {
  int parallel = 4;         // jobs decoded at once
  int context = 0;          // positions per job (prompt + generated)
  int prefill_chunk = 256;  // prompt tokens per forward pass at most (and their chunk grid)
  // While slots decode, prompts prefill beside them in the same passes with as many tokens as
  // keep a pass within this factor of a decode-only pass (measured as the server runs); with more
  // prompts waiting than slots decoding, the extra time is this factor's share per waiting
  // prompt and decoding slot.
  double decode_slowdown = 1.5;
  // A prompt with at most 32 tokens left runs whole beside decoding slots where that keeps the
  // pass within this factor of a decode-only pass (else it is cut like a long one): cutting it
  // would save the decoders little and cost its first token several passes.
  double short_prompt_slowdown = 3;
  double timeout_s = 300;  // a job's time limit, from submission (queueing included)
  ExecContext exec = {};   // how the passes compute
  CacheDtype keys_values = CacheDtype::f32;  // how attention layers keep them (model/block.h)
  ServeMetrics* metrics = nullptr;           // where token counts and latencies go (may be null)
  int64_t prefix_cache_bytes = int64_t(1) << 30;  // serve/prefix_cache.h; 0: no reuse
};

struct SchedulerStats {
  int active = 0, queued = 0;
  int64_t completed = 0, cancelled = 0, timed_out = 0, failed = 0;
  // Forward passes, and those that carried decoding slots' tokens and prompt tokens together.
  int64_t passes = 0, mixed_passes = 0;
  PrefixCacheStats prefix_cache;
};

class Scheduler {
 public:
  Scheduler(const Weights& weights, const Tokenizer& tokenizer, const SchedulerOptions& options);
  ~Scheduler();  // stops: jobs still queued or running end with a 503 error
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  const SchedulerOptions& options() const { return o_; }
  // Queues a job (the caller has checked it fits in options().context); returns at once.
  std::shared_ptr<Job> submit(JobSpec spec);
  SchedulerStats stats() const;
  int64_t decode_memory_bytes() const;  // KV rows and recurrent states of every slot
  // How a job whose client went away ends.
  static JobOutcome cancelled_outcome();

 private:
  struct Slot;
  void loop();
  int busy_slots() const;  // on the scheduler thread
  JobOutcome timeout_outcome() const;
  bool admit();  // moves queued jobs into free slots; false when stopping
  // Runs one slot's work: what it throws fails that slot's job only.
  static void guarded(Slot& slot, const std::function<void()>& work);
  int prefill_budget(int decoding, int waiting, int64_t decode_pairs, int position, int left) const;
  void step();
  void prefilled(Slot& slot, int count, std::span<float> logits);
  void reuse_prefix(Slot& slot);
  void save_prefix(Slot& slot, std::span<const uint32_t> tokens);
  void retire();
  std::optional<JobOutcome> ending(Slot& slot, SteadyClock::time_point now,
                                   int64_t SchedulerStats::*& counter);
  void start_decoding(Slot& slot, std::span<float> logits);
  void take_token(Slot& slot, std::span<float> logits);

  const Weights& w_;
  const Tokenizer& tokenizer_;
  const SchedulerOptions o_;
  struct Model;
  std::unique_ptr<Model> model_;  // the BatchedInferState and its logits
  std::vector<std::unique_ptr<Slot>> slots_;
  // A pass's time in two parts (serve/pass_cost.h), learned from the passes it runs; the
  // scheduler thread's: attention's (timed in each pass through an op profile) per query-key pair
  // it scores, and the rest by the pass's row count.
  LineCost attention_cost_;
  RowsCost rows_cost_;
  OpProfile pass_profile_;
  PrefixCache prefix_cache_;
  WarmBuffer piece_memory_;  // each prefix piece's memory, its pages touched ahead of time

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  SchedulerStats stats_;
  std::thread thread_;
};

}  // namespace gattn
