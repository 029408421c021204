// gattn serve: an OpenAI-compatible HTTP server (gattn's own connection layer, HttpTransport) in
// front of the scheduler.
//   POST /v1/completions, POST /v1/chat/completions (stream: server-sent events),
//   GET /v1/models, GET /health.
// Every error is a JSON body {"error": {"message", "type"}} with a 4xx or 5xx status.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "model/weights.h"
#include "serve/http_transport.h"
#include "serve/metrics.h"
#include "serve/openai_response.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

struct ServeOptions {
  std::string model_name = "gattn";  // what /v1/models lists and responses name
  int parallel = 4;                  // requests decoded at once
  int context = 0;                   // positions per request (prompt + max_tokens)
  int prefill_chunk = 256;
  double decode_slowdown = 1.5;      // SchedulerOptions::decode_slowdown
  double short_prompt_slowdown = 3;  // SchedulerOptions::short_prompt_slowdown
  int64_t max_body_bytes = 1 << 20;  // larger request bodies get 413
  double timeout_s = 300;            // a request's time limit (408 when exceeded)
  int http_threads = 0;              // POST workers; 0: 2 * parallel + 4, at least 8
  double header_timeout_s = 10;      // a request's header fields, from its first byte (then 408)
  double body_timeout_s = 60;        // its body, from the end of its header fields (then 408)
  int max_connections = 1024;        // more are answered 503
  int64_t prefix_cache_mib = 1024;   // reused prompt prefixes kept (0: none)
  std::string api_key = {};          // when set, every endpoint but /health needs it (Bearer)
  ExecContext exec = {};             // how the passes compute
  CacheDtype keys_values = CacheDtype::f32;  // attention's cached keys and values
  // How chats become prompts (null: ChatFormat::choose("auto") for the tokenizer alone).
  std::shared_ptr<const ChatFormat> chat_format = {};
  bool split_reasoning = true;  // a chat reply's <think> block goes to reasoning_content
};

class HttpServer {
 public:
  HttpServer(const Weights& weights, const Tokenizer& tokenizer, const ServeOptions& options);
  ~HttpServer();  // stops serving; requests still running end with 503
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds to host:port (port 0: a free port); returns the port. An error when it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop() (from another thread or a signal handler's thread).
  void run();
  // Open streams end with an error event and [DONE] first; requests not streamed get 503.
  void stop();
  SchedulerStats stats() const { return scheduler_.stats(); }
  int64_t decode_memory_bytes() const { return scheduler_.decode_memory_bytes(); }

 private:
  void route(const HttpRequest& req, ResponseWriter& w);
  void answer(const HttpRequest& req, ResponseWriter& w);
  bool authorized(const HttpRequest& req) const;
  void metrics(ResponseWriter& w) const;
  void post(const HttpRequest& req, ResponseWriter& w, bool chat);
  void stream(const std::shared_ptr<Job>& job, EventStream events, ResponseWriter& w);
  void health(ResponseWriter& w) const;

  const Tokenizer& tokenizer_;
  const int vocab_size_;
  const ServeOptions o_;
  const std::shared_ptr<const ChatFormat> chat_;
  ServeMetrics metrics_;
  Scheduler scheduler_;
  std::unique_ptr<HttpTransport> http_;
  std::atomic<bool> stopping_ = false;
  std::atomic<int> open_streams_ = 0;  // streamed responses not yet ended
  std::atomic<int64_t> next_id_ = 0;
};

}  // namespace gattn
