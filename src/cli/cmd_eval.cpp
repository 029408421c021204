// gattn eval: loss, perplexity and bits per byte of a checkpoint on a shard or on text.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "cli/validators.h"
#include "model/intervention.h"
#include "train/evaluate.h"
#include "util/threads.h"

namespace gattn {

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Loss, perplexity and bits per byte of a checkpoint");
  static std::string checkpoint, tokenizer_path, window = "bos", rope_scaling,
                                                 weights_dtype = "auto";
  static std::vector<std::string> data, intervene;
  static int seq = 256, batch = 8, threads = 0;
  static bool json = false;
  static int64_t windows = 0;
  cmd->add_option(
         "--checkpoint", checkpoint,
         "checkpoint folder, run folder (its newest), Hugging Face model folder or GGUF file")
      ->required();
  cmd->add_option("--data", data, "a token shard, or text files / folders / .jsonl")->required();
  cmd->add_option("--tokenizer", tokenizer_path,
                  "tokenizer.json (needed for text and for bits per byte)");
  cmd->add_option("--seq", seq, "tokens per window")->check(integer_in_range(2, 1 << 20));
  cmd->add_option("--windows", windows, "windows to evaluate, in stream order (0: all)")
      ->check(non_negative_integer());
  cmd->add_option("--window", window, "bos (BOS at position 0) or plain")
      ->check(CLI::IsMember({"bos", "plain"}));
  cmd->add_option("--batch", batch, "windows per forward pass")->check(positive_integer());
  add_threads_option(cmd, threads, "threads (default: all cores)");
  add_weights_dtype_option(cmd, weights_dtype, true);
  cmd->add_option(
      "--intervene", intervene,
      "[layer:L:]gate[@POS]=constant:X|open|closed or [layer:L:]value[@POS]=zero, POS a "
      "position or first (repeatable); the loss is reported "
      "next to the unmodified one");
  cmd->add_flag("--json", json,
                "print one JSON object (loss and perplexity at full precision) instead of text");
  cmd->add_option(
      "--rope-scaling", rope_scaling,
      "an HF rope_scaling object replacing the checkpoint's, e.g. "
      "'{\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": 256}'");
  cmd->callback([] {
    use_threads(threads);
    std::string folder;
    const auto weights = with_context(
        load_inference_model(checkpoint, weights_dtype, folder, stderr_log()), seq, rope_scaling);
    TrainState state(*weights);
    if (weights_dtype == "w8a8") {
      ExecContext exec = state.exec();
      exec.int8_projection_inputs = true;
      state.set_exec(exec);
    }
    const HeldOutTokens tokens(data, tokenizer_path, weights->config().vocab_size);
    const WindowKind kind = window == "bos" ? WindowKind::bos : WindowKind::plain;
    Interventions interventions;
    for (const std::string& spec : intervene)
      add_intervention(interventions, spec, weights->config().num_hidden_layers, seq);
    double unmodified = 0;
    std::optional<InterventionHooks> hooks;
    if (interventions.any()) {
      hooks.emplace(interventions, *weights);  // an Error when a layer cannot take them
      unmodified = evaluate(state, tokens.shard(), seq, kind, windows, batch, nullptr).loss;
      state.set_hooks(&*hooks);
    }
    const EvalResult r =
        evaluate(state, tokens.shard(), seq, kind, windows, batch, tokens.token_bytes());
    require_finite_loss(r, folder);
    if (json) {
      nlohmann::json j = {
          {"checkpoint", folder},       {"windows", r.windows},          {"seq", seq},
          {"window", window},           {"target_tokens", r.tokens},     {"loss", r.loss},
          {"perplexity", r.perplexity}, {"weights_dtype", weights_dtype}};
      if (r.bytes > 0) j["bits_per_byte"] = r.bits_per_byte;
      if (interventions.any()) j["unmodified_loss"] = unmodified;
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    std::printf("checkpoint %s\n%lld windows of %d tokens (%s), %lld target tokens\n",
                folder.c_str(), (long long)r.windows, seq, window.c_str(), (long long)r.tokens);
    std::printf("loss %.4f nats/token, perplexity %.3f", r.loss, r.perplexity);
    if (r.bytes > 0)
      std::printf(", bits per byte %.4f (%lld bytes)", r.bits_per_byte, (long long)r.bytes);
    std::printf("\n");
    if (interventions.any()) {
      std::printf("with --intervene");
      for (const std::string& spec : interventions.specs) std::printf(" %s", spec.c_str());
      std::printf("; unmodified loss %.4f nats/token (%+.4f)\n", unmodified, r.loss - unmodified);
    }
  });
}

}  // namespace gattn
