#!/usr/bin/env python3
"""Runner 0, sink search: the cheapest regime on this machine where the baseline grows an
attention sink, and what the G1 gate does to it. Trains baseline and G1 in each regime on the
Bigram-Backcopy source (`gattn synthetic`; Guo et al., arXiv 2410.13835), >= 3 seeds, paired, and
reports F-Attn, Sink^0.3 and M-Act next to their uniform-attention values. Resumable.

  experiments/sink.py [--seeds 3] [--regimes short,long,...] [--threads 0] [--out runs/experiments/sink]
"""
import json
import os
import subprocess

import runner
import stats

MODEL = {  # 1 layer of 2 heads of 64, no QK-norm: the setting of Guo et al. (1-3 layers)
    "vocab_size": 65, "hidden_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 512, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "use_qk_norm": False, "max_position_embeddings": 1024,
}
RUN = {
    "model": MODEL,
    "data": {"window": "bos", "seq_len": 128},
    "batch_size": 32, "steps": 1500,
    "optimizer": {"lr": 0.001, "min_lr": 0.0001, "beta1": 0.9, "beta2": 0.95, "weight_decay": 0.1,
                  "grad_clip": 1.0},
    "schedule": {"kind": "cosine", "warmup_steps": 50},
    "eval": {"every": 1500, "windows": 512},
    "checkpoint": {"every": 500, "keep": 1},
}
LONG = {"steps": 3000, "optimizer": {"lr": 0.003, "min_lr": 0.003, "weight_decay": 0.0},
        "schedule": {"warmup_steps": 100}, "eval": {"every": 3000}}
LONG_1K = runner.merged(LONG, {"steps": 1000, "eval": {"every": 1000}})
REGIMES = {  # name: (what it changes, run overrides)
    "short": ("1 layer, lr 1e-3 cosine, weight decay 0.1, 1,500 steps of 32 x 128 tokens", {}),
    "long": ("1 layer, constant lr 3e-3, no weight decay, 3,000 steps", LONG),
    "long_2layer": ("as long, 2 layers", runner.merged(LONG, {"model": {"num_hidden_layers": 2}})),
    "long_qknorm": ("as long, QK-norm on", runner.merged(LONG, {"model": {"use_qk_norm": True}})),
    "long_1k": ("as long, stopped at 1,000 steps", LONG_1K),
    "long_1k_nope": ("as long_1k, no RoPE", runner.merged(LONG_1K, {"model": {"partial_rotary_factor": 0.0}})),
    "long_1k_2layer": ("as long_1k, 2 layers", runner.merged(LONG_1K, {"model": {"num_hidden_layers": 2}})),
    "long_1k_3layer": ("as long_1k, 3 layers", runner.merged(LONG_1K, {"model": {"num_hidden_layers": 3}})),
    "long_1k_wd": ("as long_1k, weight decay 0.1", runner.merged(LONG_1K, {"optimizer": {"weight_decay": 0.1}})),
    "long_1k_bf16": ("as long_1k, bf16 GEMM inputs (emulated)", runner.merged(LONG_1K, {"precision": "bf16_emulated"})),
}
GATES = {"baseline": {"position": "none"}, "g1": {"position": "sdpa"}}


def head_table(out, variants, seeds):
    """Markdown: per run (its analysis.json), every head's first-token attention (layer-major),
    how many heads exceed the sink thresholds 0.2, 0.3 and 0.5, and for a gated run each head's
    fraction of gate scores below 0.1 and its mean |Y| before and after the gate."""
    lines = ["| run | first-token attention per head | heads above 0.2 / 0.3 / 0.5 | gate scores below 0.1 | "
             "mean \\|Y\\| before -> after the gate |", "|---|---|---|---|---|"]
    heads = lambda xs, f: ", ".join(f.format(x) for x in xs)
    for v, s, an in runner.run_analyses(out, variants, seeds):
        gates = [layer["gate"] for layer in an["layers"] if layer.get("gate")]
        below = heads([x for g in gates for x in g["fraction_below_0.1"]], "{:.2f}") or "–"
        before = heads([x for g in gates for x in g["mean_abs_before"]], "{:.2f}")
        after = heads([x for g in gates for x in g["mean_abs_after"]], "{:.3f}")
        first = runner.head_first_token(an)
        above = " / ".join(str(sum(x > e for x in first)) for e in (0.2, 0.3, 0.5))
        lines.append(f"| {v['name']} s{s} | {heads(first, '{:.3f}')} | {above} | {below} | "
                     + (f"{before} -> {after}" if gates else "–") + " |")
    return "\n".join(lines) + "\n"


def source_line(data):
    """Markdown: the validation shard's entropy and share of copy targets (its source.json)."""
    path = os.path.join(data, "source.json")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        val = json.load(f)["val"]
    return (f"Validation source: entropy {val['entropy_nats_per_token']:.4f} nats per token, "
            f"{100 * val['copy_share']:.1f}% of tokens copy targets\n\n")


def bigram_backcopy_data(a, out):
    """--data, or the runner's own Bigram-Backcopy shards (made on first use)."""
    if a.data:
        return a.data
    data = os.path.join(out, "data")
    if not os.path.exists(os.path.join(data, "source.json")):
        sizes = ["20000", "5000"] if a.smoke else ["20000000", "200000"]
        subprocess.run([a.gattn, "synthetic", "--out", data, "--train-tokens", sizes[0], "--val-tokens", sizes[1]],
                       check=True, stdout=subprocess.DEVNULL)
    return data


def main():
    a = runner.arguments(__doc__, default_seeds=3,
                         add_options=lambda ap: ap.add_argument("--regimes", default=",".join(REGIMES)))
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "sink" + ("_smoke" if a.smoke else ""))
    unknown = [r for r in a.regimes.split(",") if r not in REGIMES]
    if unknown:
        raise SystemExit(f"unknown regime: {', '.join(unknown)} (known: {', '.join(REGIMES)})")
    regimes = {r: REGIMES[r] for r in a.regimes.split(",")}
    base = runner.merged(RUN, {})
    if a.smoke:
        regimes, a.seeds = {"short": REGIMES["short"]}, 1
        runner.toy_budget(base)
    data = bigram_backcopy_data(a, out)
    runner.use_data(base, data)
    variants = [{"name": f"{r}.{g}", "gate": gate, "run": over}
                for r, (_, over) in regimes.items() for g, gate in GATES.items()]
    rows = runner.run_grid(a, base, variants, out, ["--sequences", "4" if a.smoke else "64"])
    text = source_line(data)
    for r, (what, _) in regimes.items():
        pair = [v for v in variants if v["name"].startswith(r + ".")]
        uniform = rows[(pair[0]["name"], 0)]["uniform_f_attn"]
        m_act = runner.paired_against(rows, pair, a.seeds, pair[0]["name"], "m_act")
        text += (f"## {r}: {what}\n\nF-Attn under uniform attention: {uniform:.4f}\n\n" +
                 runner.summary_table(rows, pair, a.seeds, pair[0]["name"]) +
                 ("\n" + stats.paired_table("M-Act", m_act, digits=1) if m_act else "") +
                 "\nF-Attn per seed:\n\n" + runner.per_seed_table(rows, pair, a.seeds, "f_attn", "{:.4f}") +
                 "\nM-Act per seed:\n\n" + runner.per_seed_table(rows, pair, a.seeds, "m_act", "{:.1f}") +
                 "\nPer head (first 64 validation windows):\n\n" + head_table(out, pair, a.seeds) +
                 "\nWhere the massive activations sit:\n\n" + runner.max_activation_table(out, pair, a.seeds) + "\n")
    runner.write_summary(out, "sink search: Bigram-Backcopy, baseline and G1", text)


if __name__ == "__main__":
    main()
