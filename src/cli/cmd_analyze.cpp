// gattn analyze: the paper's measurements of a checkpoint on held-out text (docs/ANALYSIS.md).
#include <cmath>
#include <cstdio>
#include <string>

#include "analysis/analyze.h"
#include "analysis/finite_metrics.h"
#include "analysis/report_html.h"
#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/stderr_log.h"
#include "cli/validators.h"
#include "io/file.h"
#include "model/intervention.h"
#include "model/train_state.h"
#include "train/evaluate.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

// The Gated DeltaNet layers' gates, one row per layer (means over value heads and tokens).
void print_delta_net_layers(const AnalysisResult& r) {
  bool header = false;
  for (const LayerAnalysis& layer : r.layers) {
    if (!layer.delta_net) continue;
    if (!header)
      std::printf(
          "\n  layer   Gated DeltaNet: gate silu(z)  |gate| < 0.1  decay exp(g)     beta\n");
    header = true;
    const DeltaNetLayerStats& d = *layer.delta_net;
    double below = 0;
    for (double f : d.fraction_gate_below_01) below += f / double(d.fraction_gate_below_01.size());
    std::printf("  %5d  %29.4f  %12.4f  %12.4f  %7.4f\n", layer.layer, d.layer_mean_gate, below,
                d.layer_mean_decay, d.layer_mean_beta);
  }
}

}  // namespace

void add_analyze_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "analyze", "Attention sinks, gate scores and massive activations of a checkpoint");
  static std::string checkpoint, tokenizer_path, out, html;
  static std::vector<std::string> data, maps, intervene;
  static AnalysisOptions o;
  static bool no_bos = false;
  static int threads = 0;
  cmd->add_option(
         "--checkpoint", checkpoint,
         "checkpoint folder, run folder (its newest), Hugging Face model folder or GGUF file")
      ->required();
  cmd->add_option("--data", data, "a token shard, or text files / folders / .jsonl")->required();
  cmd->add_option("--tokenizer", tokenizer_path, "tokenizer.json (needed for text)");
  cmd->add_option("--sequences", o.sequences, "held-out windows (the first of the data)")
      ->check(positive_integer());
  cmd->add_option("--seq", o.seq_len, "tokens per window")->check(integer_in_range(2, 1 << 20));
  cmd->add_flag("--no-bos", no_bos, "plain windows: no BOS at position 0");
  cmd->add_option("--from-position", o.from_position,
                  "also average first-token attention over query positions >= this");
  cmd->add_option("--map", maps, "LAYER:HEAD of an attention map of the first sequence");
  cmd->add_option("--out", out, "write the full results as JSON here");
  cmd->add_option("--html", html, "write an HTML report with plots here");
  add_threads_option(cmd, threads, "threads (default: all cores)");
  cmd->add_option(
      "--intervene", intervene,
      "[layer:L:]gate[@POS]=constant:X|open|closed or [layer:L:]value[@POS]=zero, POS a "
      "position or first (repeatable); the loss is reported "
      "next to the unmodified one");
  cmd->callback([] {
    use_threads(threads);
    o.bos = !no_bos;
    for (const std::string& m : maps) {
      const size_t colon = m.find(':');
      try {
        if (colon == std::string::npos) throw std::invalid_argument(m);
        o.maps.emplace_back(std::stoi(m.substr(0, colon)), std::stoi(m.substr(colon + 1)));
      } catch (const std::exception&) {
        fail("--map: expected LAYER:HEAD, found '", m, "'");
      }
    }
    std::string folder;
    const auto weights = load_checkpoint_model(checkpoint, folder, stderr_log());
    for (const std::string& spec : intervene)
      add_intervention(o.interventions, spec, weights->config().num_hidden_layers, o.seq_len);
    const HeldOutTokens tokens(data, tokenizer_path, weights->config().vocab_size);
    const AnalysisResult r = analyze(*weights, tokens.shard(), o);
    // A non-finite loss: score the windows again to name the first bad one.
    if (!std::isfinite(r.loss)) {
      TrainState state(*weights);
      require_finite_loss(
          evaluate(state, tokens.shard(), o.seq_len, o.bos ? WindowKind::bos : WindowKind::plain,
                   o.sequences, 1, nullptr),
          folder);
    }
    const nlohmann::json document = to_json(r);
    require_finite_metrics(document, folder);
    std::printf("checkpoint %s, gate %s\n", folder.c_str(), r.gate.c_str());
    std::printf("%lld sequences of %d tokens%s; loss %.4f\n", (long long)r.sequences, o.seq_len,
                o.bos ? ", BOS at position 0" : "", r.loss);
    if (r.unmodified_loss)
      std::printf("with --intervene %s; unmodified loss %.4f (%+.4f)\n",
                  document["interventions"].dump().c_str(), *r.unmodified_loss,
                  r.loss - *r.unmodified_loss);
    std::printf("\n  layer   F-Attn  F-Attn(>=%d)   max |h|   at (seq, pos, ch)   gate score\n",
                o.from_position);
    for (const LayerAnalysis& layer : r.layers) {
      if (layer.attention)
        std::printf("  %5d  %7.4f  %11.4f", layer.layer, layer.f_attn, layer.f_attn_from_k);
      else
        std::printf("  %5d  %-20s", layer.layer, "  (Gated DeltaNet)");
      std::printf("  %8.2f   (%lld, %lld, %lld)", layer.max_abs_hidden,
                  (long long)layer.max_sequence, (long long)layer.max_position,
                  (long long)layer.max_channel);
      if (layer.gate && layer.gate->has_scores)
        std::printf("   %10.4f", layer.gate->layer_mean_score);
      std::printf("\n");
    }
    print_delta_net_layers(r);
    std::printf(
        "\n  F-Attn %.4f (uniform attention: %.4f); over positions >= %d: %.4f (uniform %.4f)\n",
        r.f_attn, r.uniform_f_attn, o.from_position, r.f_attn_from_k, r.uniform_f_attn_from_k);
    std::printf("  Sink^%.1f %.3f of heads (uniform: %.0f)\n", o.sink_threshold, r.sink_fraction,
                r.uniform_sink_fraction);
    std::printf("  M-Act %.2f (max |hidden state| per layer, averaged over layers)\n", r.m_act);
    if (r.gate_score)
      std::printf("  gate score %.4f (mean over layers, tokens and channels)\n", *r.gate_score);
    if (r.delta_net_gate)
      std::printf("  Gated DeltaNet output gate silu(z) %.4f (mean over its layers)\n",
                  *r.delta_net_gate);
    if (!out.empty()) {
      const std::string text = document.dump(1) + "\n";
      write_text_file_atomically(out, text);
      std::printf("  wrote %s\n", out.c_str());
    }
    if (!html.empty()) {
      const std::string text = analysis_report_html(document, "gattn analyze: " + folder);
      write_text_file_atomically(html, text);
      std::printf("  wrote %s\n", html.c_str());
    }
  });
}

}  // namespace gattn
