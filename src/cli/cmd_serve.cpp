// gattn serve: an OpenAI-compatible HTTP server for a checkpoint (docs/INFERENCE.md, Server).
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "cli/validators.h"
#include "model/batched_infer_state.h"
#include "serve/http_server.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

namespace {
struct ServeFlags {
  std::string checkpoint, tokenizer, host = "127.0.0.1", model_name, weights_dtype = "auto";
  std::string chat_template = "auto", reasoning_format = "auto", kv_dtype = "f32";
  int port = 8080, threads = 0, context = 0;
  ServeOptions options;
};

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

// Stops the server on SIGINT or SIGTERM: the signals are blocked in every thread (from the
// start, before any thread exists) and awaited by this one, so the stop runs in an ordinary
// thread, not in a signal handler.
class SignalStop {
 public:
  explicit SignalStop(HttpServer& server) : signals_(stop_signals()) {
    thread_ = std::thread([this, &server] {
      const timespec poll{.tv_sec = 0, .tv_nsec = 200'000'000};
      while (!done_)
        if (sigtimedwait(&signals_, nullptr, &poll) > 0) {
          std::fprintf(stderr, "gattn serve: stopping\n");
          server.stop();
          return;
        }
    });
  }
  ~SignalStop() {
    done_ = true;
    thread_.join();
  }

 private:
  sigset_t signals_;
  std::atomic<bool> done_ = false;
  std::thread thread_;
};
}  // namespace

// The memory available to this process (MemAvailable of /proc/meminfo), 0 when unknown.
int64_t available_memory_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  int64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib * 1024;
}

// The decode memory (KV rows, DeltaNet states) is allocated whole at start: refuse a context
// whose memory would not fit, naming the flag that shrinks it.
void check_decode_memory(const Weights& w, int parallel, int context, CacheDtype kv, bool chosen) {
  const int64_t need = BatchedInferState::planned_decode_memory_bytes(w, parallel, context, kv);
  const int64_t have = available_memory_bytes();
  if (have > 0 && need > have * 9 / 10)
    fail("serve: the decode memory of ", parallel, " slots x ", context, " positions",
         chosen ? "" : " (the model's max_position_embeddings)", " is ", need >> 20,
         " MiB, more than 90% of the available ", have >> 20,
         " MiB; choose a smaller --context or --parallel, or --kv-dtype bf16");
}

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "An OpenAI-compatible HTTP server for a checkpoint");
  static ServeFlags f;
  ServeOptions& o = f.options;
  cmd->add_option(
         "--checkpoint", f.checkpoint,
         "checkpoint folder, run folder (its newest), Hugging Face model folder or GGUF file")
      ->required();
  cmd->add_option("--tokenizer", f.tokenizer, "tokenizer.json (default: the checkpoint's)");
  cmd->add_option("--host", f.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f.port, "port (0: any free port)")
      ->capture_default_str()
      ->check(integer_in_range(0, 65535));
  cmd->add_option("--parallel", o.parallel, "requests decoded at once (one batch)")
      ->capture_default_str()
      ->check(integer_in_range(1, 256));
  cmd->add_option("--context", f.context,
                  "positions per request, prompt + max_tokens (default: the model's "
                  "max_position_embeddings; the KV memory, --parallel x context positions, is "
                  "printed at start)");
  cmd->add_option("--max-body-bytes", o.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(integer_in_range(1, int64_t(1) << 32));
  cmd->add_option("--timeout-s", o.timeout_s, "a request's time limit in seconds (then 408)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--decode-slowdown", o.decode_slowdown,
                  "while requests decode, new prompts prefill in the same passes with as many "
                  "tokens as keep a pass within this factor of a decode-only one (with more "
                  "prompts waiting than requests decoding, the extra time grows with their ratio)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1000.0));
  cmd->add_option("--short-prompt-slowdown", o.short_prompt_slowdown,
                  "beside decoding requests, a prompt with at most 32 tokens left runs in one "
                  "pass where that keeps the pass within this factor of a decode-only one")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1000.0));
  cmd->add_option("--prefix-cache-mib", o.prefix_cache_mib,
                  "memory for reused prompt prefixes (keys, values and recurrent states on the "
                  "256-token grid and at each request's end; 0: none)")
      ->capture_default_str()
      ->check(integer_in_range(0, int64_t(1) << 30));
  cmd->add_option("--header-timeout-s", o.header_timeout_s,
                  "seconds a request's header fields may take from its first byte (then 408)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--body-timeout-s", o.body_timeout_s,
                  "seconds a request's body may take after its header fields (then 408)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--max-connections", o.max_connections,
                  "open connections at most (more are answered 503)")
      ->capture_default_str()
      ->check(integer_in_range(1, 1 << 20));
  cmd->add_option("--api-key", o.api_key,
                  "a key every request but /health must send (Authorization: Bearer KEY; else "
                  "401); also read from GATTN_API_KEY")
      ->envname("GATTN_API_KEY");
  cmd->add_option("--chat-template", f.chat_template,
                  "how chats become prompts: auto (the checkpoint's chat_template, else a built-in "
                  "one), chatml, qwen3, qwen3_5, or a .jinja file")
      ->capture_default_str();
  cmd->add_option("--reasoning-format", f.reasoning_format,
                  "auto: a chat reply's <think> block is returned as reasoning_content; none: "
                  "left in content")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none"}));
  cmd->add_option("--model-name", f.model_name,
                  "the model's id in responses (default: the "
                  "checkpoint folder's name)");
  add_weights_dtype_option(cmd, f.weights_dtype);
  add_kv_dtype_option(cmd, f.kv_dtype);
  add_threads_option(cmd, f.threads, "threads (default: all cores)");
  cmd->callback([] {
    const sigset_t blocked = stop_signals();
    pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
    use_threads(f.threads);
    std::string folder;
    const auto weights = load_inference_model(f.checkpoint, f.weights_dtype, folder, stderr_log());
    const Tokenizer tokenizer = load_model_tokenizer(f.tokenizer, folder);
    ServeOptions options = f.options;
    options.exec = inference_exec();
    const int trained = weights->config().max_position_embeddings;
    if (f.context < 0 || f.context > trained)
      fail("--context ", f.context, " is outside [1, max_position_embeddings = ", trained, "]");
    options.context = f.context > 0 ? f.context : trained;
    options.keys_values = cache_dtype(f.kv_dtype);
    check_decode_memory(*weights, options.parallel, options.context, options.keys_values,
                        f.context > 0);
    options.chat_format = std::make_shared<const ChatFormat>(
        ChatFormat::choose(f.chat_template, folder, tokenizer, stderr_log()));
    options.split_reasoning = f.reasoning_format == "auto";
    const std::filesystem::path path = std::filesystem::path(folder).lexically_normal();
    options.model_name = !f.model_name.empty() ? f.model_name
                         : path.has_filename() ? path.filename().string()
                                               : path.parent_path().filename().string();
    if (options.model_name.empty()) options.model_name = "gattn";
    HttpServer server(*weights, tokenizer, options);
    const int port = server.bind(f.host, f.port);
    SignalStop signals(server);
    std::fprintf(stderr,
                 "gattn serve: listening on http://%s:%d (model %s, %d parallel, context %d, "
                 "decode memory %.1f MiB, keys and values %s)\n",
                 f.host.c_str(), port, options.model_name.c_str(), options.parallel,
                 options.context, double(server.decode_memory_bytes()) / (1 << 20),
                 f.kv_dtype.c_str());
    server.run();
  });
}

}  // namespace gattn
