#include "serve/http_server.h"

#include <algorithm>
#include <ctime>
#include <random>
#include <thread>

#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "util/error.h"

namespace gattn {
using nlohmann::json;

namespace {
using namespace std::chrono_literals;

constexpr std::string_view kJson = "application/json";

void reply_error(ResponseWriter& w, int status, const std::string& message) {
  w.send(status, kJson, json_text(error_body(message, error_type(status))));
}

// What a validated request becomes: its job, and what its response repeats.
struct Prepared {
  JobSpec spec;
  std::string prompt_text;
  bool reasoning_open = false;  // the chat prompt opened a <think> block
};

const JobOutcome kShuttingDown{.error_status = 503, .error = "the server is shutting down"};

HttpTransportOptions transport_options(const ServeOptions& o) {
  if (o.max_body_bytes < 1) fail("serve: --max-body-bytes must be positive");
  HttpTransportOptions t;
  t.header_timeout_s = o.header_timeout_s;
  t.body_timeout_s = o.body_timeout_s;
  t.workers = o.http_threads > 0 ? o.http_threads : std::max(8, 2 * o.parallel + 4);
  t.max_connections = o.max_connections;
  t.limits.max_body_bytes = o.max_body_bytes;
  return t;
}
}  // namespace

HttpServer::HttpServer(const Weights& weights, const Tokenizer& tokenizer,
                       const ServeOptions& options)
    : tokenizer_(tokenizer),
      vocab_size_(weights.config().vocab_size),
      o_(options),
      chat_(options.chat_format ? options.chat_format
                                : std::make_shared<const ChatFormat>(
                                      ChatFormat::choose("auto", "", tokenizer, discard_log()))),
      scheduler_(weights, tokenizer,
                 {.parallel = options.parallel,
                  .context = options.context,
                  .prefill_chunk = options.prefill_chunk,
                  .decode_slowdown = options.decode_slowdown,
                  .short_prompt_slowdown = options.short_prompt_slowdown,
                  .timeout_s = options.timeout_s,
                  .exec = options.exec,
                  .keys_values = options.keys_values,
                  .metrics = &metrics_,
                  .prefix_cache_bytes = options.prefix_cache_mib << 20}),
      http_(std::make_unique<HttpTransport>(
          transport_options(options),
          [this](const HttpRequest& req, ResponseWriter& w) { route(req, w); },
          [](int status, const std::string& message) {
            return json_text(error_body(message, error_type(status)));
          })) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind(const std::string& host, int port) { return http_->bind(host, port); }

void HttpServer::run() { http_->run(); }

void HttpServer::stop() {
  stopping_ = true;
  // Each open stream ends itself with an error event and [DONE] at its next turn (within about
  // 100 ms). A stream whose client does not read gets 2 s.
  const auto limit = SteadyClock::now() + 2s;
  while (open_streams_ > 0 && SteadyClock::now() < limit) std::this_thread::sleep_for(10ms);
  http_->stop();
}

namespace {
// Passes every call on, counting the response by endpoint and status as it starts (before the
// client can see it, so a client's next /metrics already counts it).
class CountedWriter final : public ResponseWriter {
 public:
  CountedWriter(ResponseWriter& w, ServeMetrics& metrics, std::string endpoint)
      : w_(w), metrics_(metrics), endpoint_(std::move(endpoint)) {}
  bool send(int status, std::string_view type, std::string_view body,
            const HttpHeaders& headers) override {
    metrics_.request(endpoint_, status);
    return w_.send(status, type, body, headers);
  }
  bool begin_stream(int status, std::string_view type, const HttpHeaders& headers) override {
    metrics_.request(endpoint_, status);
    return w_.begin_stream(status, type, headers);
  }
  bool write(std::string_view piece) override { return w_.write(piece); }
  bool end_stream() override { return w_.end_stream(); }
  bool client_gone() override { return w_.client_gone(); }

 private:
  ResponseWriter& w_;
  ServeMetrics& metrics_;
  const std::string endpoint_;
};

// The endpoint label of /metrics: the server's paths, every other one as "other" (a label per
// path a client makes up would grow without bound).
std::string endpoint_label(const std::string& path) {
  for (const char* known :
       {"/health", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions"})
    if (path == known) return path;
  return "other";
}

// Compares in time independent of where the strings differ.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}
}  // namespace

void HttpServer::route(const HttpRequest& req, ResponseWriter& w) {
  CountedWriter counted(w, metrics_, endpoint_label(req.path));
  answer(req, counted);
}

bool HttpServer::authorized(const HttpRequest& req) const {
  if (o_.api_key.empty() || req.path == "/health") return true;
  const std::string_view given = req.header("authorization").value_or("");
  return given.starts_with("Bearer ") && same_secret(given.substr(7), o_.api_key);
}

void HttpServer::answer(const HttpRequest& req, ResponseWriter& w) {
  if (!authorized(req)) {
    w.send(401, kJson,
           json_text(error_body("a valid API key is required: Authorization: Bearer <key>",
                                error_type(401))),
           {{"WWW-Authenticate", "Bearer"}});
    return;
  }
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (get && req.path == "/health") return health(w);
  if (get && req.path == "/metrics") return metrics(w);
  if (get && req.path == "/v1/models") {
    const nlohmann::json model = {
        {"id", o_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "gattn"}};
    w.send(200, kJson, json_text({{"object", "list"}, {"data", nlohmann::json::array({model})}}));
    return;
  }
  const bool chat = req.path == "/v1/chat/completions";
  if (req.method == "POST" && (chat || req.path == "/v1/completions")) return post(req, w, chat);
  reply_error(w, 404, cat("no endpoint ", req.method, " ", req.path));
}

void HttpServer::metrics(ResponseWriter& w) const {
  const SchedulerStats s = scheduler_.stats();
  const HttpTransportStats t = http_->stats();
  struct Row {
    const char *name, *type, *help;
    double value;
  };
  const Row rows[] = {
      {"gattn_requests_queued", "gauge", "Requests waiting for a slot.", double(s.queued)},
      {"gattn_slots_busy", "gauge", "Slots holding a request.", double(s.active)},
      {"gattn_slots", "gauge", "Slots (--parallel).", double(o_.parallel)},
      {"gattn_requests_completed_total", "counter", "Requests that finished.", double(s.completed)},
      {"gattn_requests_cancelled_total", "counter", "Requests whose client went away.",
       double(s.cancelled)},
      {"gattn_requests_timed_out_total", "counter", "Requests over the time limit (--timeout-s).",
       double(s.timed_out)},
      {"gattn_requests_failed_total", "counter", "Requests that failed while running.",
       double(s.failed)},
      {"gattn_passes_total", "counter", "Forward passes of the scheduler.", double(s.passes)},
      {"gattn_mixed_passes_total", "counter",
       "Passes carrying decoding tokens and prompt tokens together.", double(s.mixed_passes)},
      {"gattn_prefix_cache_hits_total", "counter",
       "Requests that started from a cached prompt prefix.", double(s.prefix_cache.hits)},
      {"gattn_prefix_cache_misses_total", "counter", "Requests that found no cached prefix.",
       double(s.prefix_cache.misses)},
      {"gattn_prefix_cache_reused_tokens_total", "counter",
       "Prompt tokens not run again thanks to the prefix cache.",
       double(s.prefix_cache.tokens_reused)},
      {"gattn_prefix_cache_bytes", "gauge", "Memory of the prefix cache.",
       double(s.prefix_cache.bytes)},
      {"gattn_prefix_cache_evictions_total", "counter", "Prefix cache pieces dropped for room.",
       double(s.prefix_cache.evicted)},
      {"gattn_http_connections_open", "gauge", "Open client connections.",
       double(t.open_connections)},
      {"gattn_http_header_timeouts_total", "counter",
       "Connections closed with 408: header fields too slow.", double(t.header_timeouts)},
      {"gattn_http_body_timeouts_total", "counter", "Connections closed with 408: body too slow.",
       double(t.body_timeouts)},
      {"gattn_http_malformed_total", "counter", "Malformed requests (4xx, 5xx).",
       double(t.malformed)},
      {"gattn_http_refused_connections_total", "counter", "Connections over --max-connections.",
       double(t.refused_connections)},
  };
  std::string text;
  for (const Row& r : rows) text += metric_line(r.name, r.type, r.help, r.value);
  w.send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_.text(text));
}

void HttpServer::health(ResponseWriter& w) const {
  const SchedulerStats s = scheduler_.stats();
  w.send(200, kJson,
         json_text({{"status", "ok"},
                    {"parallel", o_.parallel},
                    {"context", o_.context},
                    {"active", s.active},
                    {"queued", s.queued},
                    {"completed", s.completed},
                    {"cancelled", s.cancelled},
                    {"timed_out", s.timed_out},
                    {"failed", s.failed},
                    {"prefix_cache",
                     {{"hits", s.prefix_cache.hits},
                      {"misses", s.prefix_cache.misses},
                      {"tokens_reused", s.prefix_cache.tokens_reused},
                      {"pieces", s.prefix_cache.pieces},
                      {"mib", double(s.prefix_cache.bytes) / (1 << 20)},
                      {"limit_mib", o_.prefix_cache_mib}}}}));
}

namespace {
// The prompt's tokens and the job's options; an Error (400) when the request cannot run.
json messages_json(const std::vector<ChatMessage>& messages) {
  json out = json::array();
  for (const ChatMessage& m : messages) {
    json message = {{"role", m.role}, {"content", m.content}};
    if (m.reasoning_content) message["reasoning_content"] = *m.reasoning_content;
    out.push_back(std::move(message));
  }
  return out;
}

Prepared prepare(const OpenAiRequest& r, const Tokenizer& tokenizer, const ChatFormat& chat,
                 int vocab_size, int context) {
  Prepared p;
  std::vector<uint32_t>& ids = p.spec.prompt;
  if (r.chat) {  // the messages' text never becomes control tokens
    ChatFormat::Prompt prompt = chat.render(messages_json(r.messages), r.chat_template_kwargs);
    ids = std::move(prompt.ids);
    p.reasoning_open = prompt.opens_reasoning;
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
  o.end_tokens = r.chat ? chat.end_ids() : std::vector<uint32_t>{tokenizer.end_of_text_id()};
  if (r.ignore_eos) o.end_tokens.clear();
  p.spec.logprobs = r.logprobs;
  p.spec.prompt_logprobs = r.echo && r.logprobs >= 0;
  return p;
}
}  // namespace

void HttpServer::post(const HttpRequest& req, ResponseWriter& w, bool chat) {
  OpenAiRequest r;
  Prepared p;
  try {
    r = chat ? parse_chat_request(req.body) : parse_completion_request(req.body);
    p = prepare(r, tokenizer_, *chat_, vocab_size_, o_.context);
  } catch (const Error& e) {
    return reply_error(w, 400, e.what());
  }
  const int prompt_tokens = int(p.spec.prompt.size());
  const ResponseHeader header{
      .id = cat(chat ? "chatcmpl-" : "cmpl-", ++next_id_),
      .created = int64_t(std::time(nullptr)),
      .model = o_.model_name,
      .chat = chat,
      .split_reasoning = chat && o_.split_reasoning && chat_->has_reasoning(),
      .reasoning_open = p.reasoning_open};
  const std::shared_ptr<Job> job = scheduler_.submit(std::move(p.spec));
  if (r.stream) return stream(job, EventStream(header, tokenizer_, r, prompt_tokens), w);
  // A client that went away frees its slot now, not when its request would have finished.
  JobProgress ignored;
  while (!job->wait(ignored, 100ms)) {
    if (stopping_ || w.client_gone()) {
      job->cancel();
      const JobOutcome& why = stopping_ ? kShuttingDown : Scheduler::cancelled_outcome();
      return reply_error(w, why.error_status, why.error);
    }
    ignored = {};
  }
  const JobOutcome& out = job->outcome();
  if (out.error_status) return reply_error(w, out.error_status, out.error);
  w.send(200, kJson,
         json_text(completion_response(header, tokenizer_, r, p.prompt_text, prompt_tokens, out)));
}

// Server-sent events as the job produces text. Stopping (SIGTERM): the stream still ends
// properly, with an error event and [DONE]. A client that went away frees its slot.
void HttpServer::stream(const std::shared_ptr<Job>& job, EventStream events, ResponseWriter& w) {
  struct Open {  // counts the stream until it ends, also when something throws
    std::atomic<int>& n;
    explicit Open(std::atomic<int>& count) : n(count) { ++n; }
    ~Open() { --n; }
  } open(open_streams_);
  bool ok = w.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  while (ok) {
    JobProgress progress;
    const bool finished = job->wait(progress, 100ms);
    const bool stopped = !finished && stopping_;
    std::string text = events.progress(progress, finished);
    if (finished || stopped) text += events.end(finished ? job->outcome() : kShuttingDown);
    ok = w.write(text);
    if (finished || stopped) {
      ok = ok && w.end_stream();
      break;
    }
  }
  if (!ok || stopping_) job->cancel();
}

}  // namespace gattn
