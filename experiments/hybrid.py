#!/usr/bin/env python3
"""Runner 15, does G1 matter in a hybrid? (issue 31's experiment). Written, with its rule, family
and stopping rule, before its first run; RESULTS.md section 15 repeats the plan.

Qwen3.5 and Qwen3-Next put G1 on the full-attention layers of a hybrid whose other layers are
Gated DeltaNet (with an output gate of their own). Does the G1 gate still lower the loss and the
massive activations there, and how does the hybrid compare with an all-attention G1 model?

Arms, on the default corpus (the quick start's data, model width, MLP and batch), 800 steps (the
quick start's schedule stretched: cosine over 800 steps, 20 warmup, lr 3e-3, min lr 3e-4), final
val loss on the whole validation split, `gattn analyze --sequences 64` of the final checkpoint:
  hybrid_none   configs/hybrid.json (layers L, L, L, F) without a gate
  hybrid_g1     configs/hybrid.json, G1 (elementwise, after SDPA) on its full-attention layer
  attention_g1  configs/hybrid_attention.json: four full-attention G1 layers, totals within 3%
Seeds 50, 51, 52 (never used before), paired: a seed gives every arm the same data order.

Primary family, fixed now, Holm over its 2 rows, two-sided paired t, n = 3: hybrid_g1 − hybrid_none
on the final val loss and on M-Act (the paper's direction for both: < 0). Verdict per row
(stats.verdict): Holm p < 0.05 in the predicted direction **reproduced**, in the other
**contradicted**, otherwise **not significant**. With n = 3 the critical t is 4.30: only large
effects can be significant (the section says so beside a "not significant").
Descriptive, no verdict: hybrid_g1 − attention_g1 on val loss and M-Act (paired table, printed
for scale), F-Attn of the full-attention layers, and the DeltaNet layers' gate silu(z), decay
exp(g) and beta (`gattn analyze`'s delta_net statistics) per arm and seed.

Stopping rule: 3 seeds per arm, no interim verdicts, no exclusions: a run that fails is resumed;
one that still fails (or diverges to a non-finite loss) is reported as such, never dropped.
Resumable after any interruption; 1 thread while the other core builds.

  experiments/hybrid.py [--threads 1 --jobs 2] [--out runs/experiments/hybrid] [--data D] [--smoke]
"""
import json
import os
import statistics

import runner
import stats

SEEDS = [50, 51, 52]
STEPS = 800


def model_config(name):
    with open(os.path.join(runner.ROOT, "configs", name)) as f:
        return json.load(f)


ARMS = [
    {"name": "hybrid_none", "model": model_config("hybrid.json"), "gate": {"position": "none"}},
    {"name": "hybrid_g1", "model": model_config("hybrid.json"), "gate": {"position": "sdpa"}},
    {"name": "attention_g1", "model": model_config("hybrid_attention.json"), "gate": {"position": "sdpa"}},
]


def delta_net_means(analysis):
    """(gate silu(z), decay exp(g), beta): means over the DeltaNet layers, or Nones without any."""
    layers = [l["delta_net"] for l in analysis["layers"] if "delta_net" in l]
    if not layers:
        return None, None, None
    return tuple(statistics.fmean(l[key] for l in layers)
                 for key in ("layer_mean_gate", "layer_mean_decay", "layer_mean_beta"))


def per_seed_rows(out, rows, seeds):
    text = "| arm | seed | val loss | M-Act | F-Attn | DeltaNet gate silu(z) | decay exp(g) | beta | parameters |\n"
    text += "|---|---|---|---|---|---|---|---|---|\n"
    for arm in ARMS:
        for s in seeds:
            row = rows[(arm["name"], s)]
            with open(os.path.join(out, "runs", f"{arm['name']}-s{s}", "analysis.json")) as f:
                gate, decay, beta = delta_net_means(json.load(f))
            text += (f"| {arm['name']} | {s} | {row['val_loss']:.4f} | {row['m_act']:.2f} | "
                     f"{runner.fmt('{:.4f}', row['f_attn'])} | {runner.fmt('{:.4f}', gate)} | "
                     f"{runner.fmt('{:.4f}', decay)} | {runner.fmt('{:.4f}', beta)} | {row['parameters']:,} |\n")
    return text


def main():
    a = runner.arguments(__doc__, default_seeds=len(SEEDS))
    out, base, seeds, rows = runner.long_run_grid(a, "hybrid", ARMS, SEEDS, STEPS)

    text = f"{base['steps']} steps per run, seeds {seeds[0]}-{seeds[-1]}; per run:\n\n"
    text += per_seed_rows(out, rows, seeds)
    primary = [(f"{label}: hybrid_g1 − hybrid_none", runner.contrast(rows, seeds, "hybrid_g1", "hybrid_none", key))
               for key, label in (("val_loss", "val loss"), ("m_act", "M-Act"))]
    text += "\n" + stats.paired_table("The primary family", primary)
    adjusted = stats.holm([t["p"] for _, t in primary])
    for (label, t), p in zip(primary, adjusted):
        text += f"- {label}: **{stats.verdict(p, t['mean'], -1)}**\n"
    scale = [(f"{label}: hybrid_g1 − attention_g1", runner.contrast(rows, seeds, "hybrid_g1", "attention_g1", key))
             for key, label in (("val_loss", "val loss"), ("m_act", "M-Act"))]
    text += "\n" + stats.paired_table("Hybrid against all attention (descriptive, no verdict)", scale)
    runner.write_summary(out, "hybrid: does G1 matter in a hybrid? (RESULTS.md section 15)", text)


if __name__ == "__main__":
    main()
