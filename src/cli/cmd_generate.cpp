// gattn generate: text from a checkpoint, streamed to stdout as it is produced.
#include <cstdio>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "cli/validators.h"
#include "infer/chat_format.h"
#include "infer/generate.h"
#include "io/file.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

namespace {
struct GenerateFlags {
  std::string checkpoint, tokenizer, prompt, prompt_file, system, weights_dtype = "auto",
                                                                  kv_dtype = "f32";
  std::string chat_template = "auto";
  bool chat = false, no_thinking = false, stats = false;
  int threads = 0;
  GenerateOptions options;
};

}  // namespace

void add_generate_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("generate", "Generate text from a checkpoint (KV cache, sampling)");
  static GenerateFlags f;
  GenerateOptions& o = f.options;
  cmd->add_option(
         "--checkpoint", f.checkpoint,
         "checkpoint folder, run folder (its newest), Hugging Face model folder or GGUF file")
      ->required();
  cmd->add_option("--tokenizer", f.tokenizer, "tokenizer.json (default: the checkpoint's)");
  auto* prompt = cmd->add_option("--prompt", f.prompt, "the prompt text");
  cmd->add_option("--prompt-file", f.prompt_file, "read the prompt from this file")
      ->excludes(prompt);
  cmd->add_option("--max-tokens", o.max_tokens, "tokens to generate at most")
      ->capture_default_str();
  cmd->add_option("--temperature", o.sampling.temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-k", o.sampling.top_k, "keep the k most likely tokens (0: off)");
  cmd->add_option("--top-p", o.sampling.top_p, "nucleus: the smallest set with this mass");
  cmd->add_option("--min-p", o.sampling.min_p, "keep tokens with p >= min_p * max p");
  cmd->add_option("--repeat-penalty", o.sampling.repeat_penalty, "penalty on tokens seen (1: off)");
  cmd->add_option("--seed", o.sampling.seed, "sampling seed")->capture_default_str();
  cmd->add_option("--stop", o.stop, "stop before this string (repeatable)");
  cmd->add_flag("--chat", f.chat, "wrap the prompt in the chat template (--chat-template)");
  cmd->add_option("--system", f.system, "with --chat: a system message");
  cmd->add_option("--chat-template", f.chat_template,
                  "auto (the checkpoint's, else a built-in one), chatml, qwen3, qwen3_5 or a "
                  ".jinja file")
      ->capture_default_str();
  cmd->add_flag("--no-thinking", f.no_thinking, "with --chat: enable_thinking false");
  cmd->add_flag("--stats", f.stats, "print prompt and generation speed to stderr");
  add_weights_dtype_option(cmd, f.weights_dtype);
  add_kv_dtype_option(cmd, f.kv_dtype);
  add_threads_option(cmd, f.threads, "threads (default: all cores)");
  cmd->callback([] {
    use_threads(f.threads);
    if (f.prompt.empty() == f.prompt_file.empty())
      fail("give the prompt with --prompt or --prompt-file");
    std::string folder;
    const auto weights = load_inference_model(f.checkpoint, f.weights_dtype, folder, stderr_log());
    const Tokenizer tokenizer = load_model_tokenizer(f.tokenizer, folder);
    const std::string text = f.prompt_file.empty() ? f.prompt : read_text_file(f.prompt_file);
    GenerateOptions options = f.options;
    options.keys_values = cache_dtype(f.kv_dtype);
    options.exec = inference_exec();
    options.end_tokens = {tokenizer.end_of_text_id()};
    std::vector<uint32_t> ids;
    if (f.chat) {  // the user's text is text: a "<|im_end|>" in it does not end the turn
      const ChatFormat format =
          ChatFormat::choose(f.chat_template, folder, tokenizer, stderr_log());
      nlohmann::json messages = nlohmann::json::array();
      if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
      messages.push_back({{"role", "user"}, {"content", text}});
      nlohmann::json kwargs = nlohmann::json::object();
      if (f.no_thinking) kwargs["enable_thinking"] = false;
      ids = format.render(messages, kwargs).ids;
      options.end_tokens = format.end_ids();
    } else {
      ids = tokenizer.encode(text);
    }
    const GenerateResult r = generate(*weights, tokenizer, ids, options, [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    });
    std::printf("\n");
    if (f.stats)
      std::fprintf(stderr,
                   "prompt %d tokens in %.3f s (%.1f tokens/s); generated %zu tokens in %.3f s "
                   "(%.1f tokens/s); finish: %s\n",
                   r.prompt_tokens, r.prefill_seconds, r.prompt_tokens / r.prefill_seconds,
                   r.tokens.size(), r.decode_seconds, r.tokens.size() / r.decode_seconds,
                   r.finish_reason.c_str());
    if (f.stats) {
      char mapped[160] = "";
      if (weights->mapped_bytes() > 0)
        std::snprintf(mapped, sizeof mapped, " + %.1f MiB read from the files (%s)",
                      weights->mapped_bytes() / 1048576.0, weights->mapped_dtypes().c_str());
      std::fprintf(stderr,
                   "memory plan: parameters %.1f MiB (%s)%s, decode memory %.1f MiB, working set "
                   "%.1f MiB\n",
                   weights->parameter_bytes() / 1048576.0, weight_dtype_name(weights->storage()),
                   mapped, r.decode_memory_bytes / 1048576.0, r.working_set_bytes / 1048576.0);
    }
  });
}

}  // namespace gattn
