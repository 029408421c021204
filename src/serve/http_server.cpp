#include "serve/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <ctime>
#include <random>
#include <thread>

#include "serve/connection_watch.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "util/error.h"

namespace gattn {

namespace {
using namespace std::chrono_literals;

void reply_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json_text(error_body(message, error_type(status))), "application/json");
}

// What a validated request becomes: its job, and what its response repeats.
struct Prepared {
  JobSpec spec;
  std::string prompt_text;
};

// The state of one streamed response between calls of its content provider.
struct Stream {
  std::shared_ptr<Job> job;
  EventStream events;
};

const JobOutcome kShuttingDown{.error_status = 503, .error = "the server is shutting down"};
}  // namespace

HttpServer::HttpServer(const Weights& weights, const Tokenizer& tokenizer,
                       const ServeOptions& options)
    : tokenizer_(tokenizer),
      vocab_size_(weights.config().vocab_size),
      o_(options),
      scheduler_(weights, tokenizer,
                 {.parallel = options.parallel,
                  .context = options.context,
                  .prefill_chunk = options.prefill_chunk,
                  .timeout_s = options.timeout_s,
                  .exec = options.exec}),
      http_(std::make_unique<httplib::Server>()) {
  if (o_.max_body_bytes < 1) fail("serve: --max-body-bytes must be positive");
  const size_t threads =
      o_.http_threads > 0 ? size_t(o_.http_threads) : size_t(std::max(8, 2 * o_.parallel + 4));
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(size_t(o_.max_body_bytes));
  routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind(const std::string& host, int port) {
  const int bound =
      port == 0 ? http_->bind_to_any_port(host) : (http_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) fail("serve: cannot listen on ", host, ":", port);
  return bound;
}

void HttpServer::run() { http_->listen_after_bind(); }

void HttpServer::stop() {
  stopping_ = true;
  // Each open stream ends itself with an error event and [DONE] at its next turn (within about
  // 100 ms); cpp-httplib's stop would cut it off in the middle instead. A stream whose client
  // does not read gets 2 s.
  const auto limit = SteadyClock::now() + 2s;
  while (open_streams_ > 0 && SteadyClock::now() < limit) std::this_thread::sleep_for(10ms);
  http_->stop();
}

void HttpServer::routes() {
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) { health(res); });
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json model = {
        {"id", o_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "gattn"}};
    res.set_content(json_text({{"object", "list"}, {"data", nlohmann::json::array({model})}}),
                    "application/json");
  });
  http_->Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    post(req, res, false);
  });
  http_->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    post(req, res, true);
  });
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = cat("HTTP status ", res.status);
    if (res.status == 404) message = cat("no endpoint ", req.method, " ", req.path);
    if (res.status == 413)
      message = cat("the request body exceeds the server's limit of ", o_.max_body_bytes, " bytes");
    reply_error(res, res.status, message);
  });
  http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          reply_error(res, 500, x.what());
        } catch (...) {
          reply_error(res, 500, "unknown error");
        }
      });
}

void HttpServer::health(httplib::Response& res) const {
  const SchedulerStats s = scheduler_.stats();
  res.set_content(json_text({{"status", "ok"},
                             {"parallel", o_.parallel},
                             {"context", o_.context},
                             {"active", s.active},
                             {"queued", s.queued},
                             {"completed", s.completed},
                             {"cancelled", s.cancelled},
                             {"timed_out", s.timed_out},
                             {"failed", s.failed}}),
                  "application/json");
}

namespace {
// The prompt's tokens and the job's options; an Error (400) when the request cannot run.
Prepared prepare(const OpenAiRequest& r, const Tokenizer& tokenizer, int vocab_size, int context) {
  Prepared p;
  std::vector<uint32_t>& ids = p.spec.prompt;
  if (r.chat) {
    ids = chatml_ids(tokenizer, r.messages);  // the messages' text never becomes control tokens
  } else if (!r.prompt_ids.empty()) {
    ids = r.prompt_ids;
    for (uint32_t id : ids)
      if (id >= uint32_t(vocab_size))
        fail("the prompt has token id ", id, ", beyond the model's vocab_size ", vocab_size);
    p.prompt_text = tokenizer.decode(std::span(ids));
  } else {
    p.prompt_text = r.prompt;
    ids = tokenizer.encode(r.prompt);
  }
  if (ids.empty()) fail("the prompt has no tokens");
  for (uint32_t id : ids)
    if (id >= uint32_t(vocab_size))
      fail("the prompt has token id ", id, ", beyond the model's vocab_size ", vocab_size);
  const int64_t room = int64_t(context) - int64_t(ids.size());
  const int64_t max_tokens = r.max_tokens.value_or(r.chat ? int(std::max<int64_t>(room, 1)) : 16);
  if (int64_t(ids.size()) + max_tokens > context)
    fail("the prompt (", ids.size(), " tokens) plus max_tokens (", max_tokens,
         ") exceeds the server's context of ", context, " positions");
  ContinuationOptions& o = p.spec.options;
  o.max_tokens = int(max_tokens);
  o.sampling = r.sampling;
  o.sampling.seed = r.seed ? *r.seed : std::random_device{}();
  check_sampling_options(o.sampling);
  o.stop = r.stop;
  o.end_tokens = {tokenizer.end_of_text_id()};
  if (r.chat) o.end_tokens.push_back(*tokenizer.token_to_id("<|im_end|>"));
  p.spec.logprobs = r.logprobs;
  p.spec.prompt_logprobs = r.echo && r.logprobs >= 0;
  return p;
}
}  // namespace

void HttpServer::post(const httplib::Request& req, httplib::Response& res, bool chat) {
  OpenAiRequest r;
  Prepared p;
  try {
    r = chat ? parse_chat_request(req.body) : parse_completion_request(req.body);
    p = prepare(r, tokenizer_, vocab_size_, o_.context);
  } catch (const Error& e) {
    return reply_error(res, 400, e.what());
  }
  const int prompt_tokens = int(p.spec.prompt.size());
  const ResponseHeader header{.id = cat(chat ? "chatcmpl-" : "cmpl-", ++next_id_),
                              .created = int64_t(std::time(nullptr)),
                              .model = o_.model_name,
                              .chat = chat};
  const std::shared_ptr<Job> job = scheduler_.submit(std::move(p.spec));
  if (!r.stream) {
    // A client that went away frees its slot now, not when its request would have finished.
    const ConnectionWatch client(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    JobProgress ignored;
    while (!job->wait(ignored, 100ms)) {
      if (stopping_ || client.closed()) {
        job->cancel();
        const JobOutcome& why = stopping_ ? kShuttingDown : Scheduler::cancelled_outcome();
        return reply_error(res, why.error_status, why.error);
      }
      ignored = {};
    }
    const JobOutcome& out = job->outcome();
    if (out.error_status) return reply_error(res, out.error_status, out.error);
    res.set_content(
        json_text(completion_response(header, tokenizer_, r, p.prompt_text, prompt_tokens, out)),
        "application/json");
    return;
  }
  auto stream = std::make_shared<Stream>(
      Stream{.job = job, .events = EventStream(header, tokenizer_, r, prompt_tokens)});
  ++open_streams_;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, stream](size_t, httplib::DataSink& sink) {
        JobProgress progress;
        const bool finished = stream->job->wait(progress, 100ms);
        std::string events = stream->events.progress(progress, finished);
        // Stopping (SIGTERM): the stream still ends properly, with an error event and [DONE].
        const bool stopped = !finished && stopping_;
        if (finished || stopped)
          events += stream->events.end(finished ? stream->job->outcome() : kShuttingDown);
        const bool ok =
            sink.is_writable() && (events.empty() || sink.write(events.data(), events.size()));
        if (ok && (finished || stopped)) sink.done();
        if (!ok || stopped) stream->job->cancel();  // the client went away: free its slot
        return ok;
      },
      [this, stream](bool success) {
        if (!success) stream->job->cancel();
        --open_streams_;  // its last byte is written
      });
}

}  // namespace gattn
