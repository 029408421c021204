#!/usr/bin/env python3
"""Runner 3, stability: a learning-rate sweep up to where the baseline breaks, the baseline
against G1 and the paper's other remedies (sandwich norm, block-output clipping at 100 and 300),
in fp32 and in bf16 mode (GEMM inputs rounded to bf16), on the default corpus. Reports per run the
final loss, loss spikes (a step whose loss exceeds 1.5x the mean of the previous 20), skipped
non-finite steps, and M-Act during training and at the end. Resumable.

  experiments/stability.py [--seeds 1] [--lrs 0.003,0.01,0.03,0.1] [--precisions fp32,bf16]
                           [--remedies baseline,g1,sandwich,clip100,clip300] [--threads 0]

Needs the default corpus, tokenizer and shards (scripts/quickstart.sh makes them), or --data.
"""
import os

import runner

REMEDIES = {
    "baseline": {"gate": {"position": "none"}},
    "g1": {"gate": {"position": "sdpa"}},
    "sandwich": {"gate": {"position": "none"}, "model": {"sandwich_norm": True}},
    "clip100": {"gate": {"position": "none"}, "model": {"block_output_clip": 100}},
    "clip300": {"gate": {"position": "none"}, "model": {"block_output_clip": 300}},
}


def main():
    def options(ap):
        ap.add_argument("--lrs", default="0.003,0.01,0.03,0.1")
        ap.add_argument("--precisions", default="fp32,bf16")
        ap.add_argument("--remedies", default=",".join(REMEDIES))

    a = runner.arguments(__doc__, default_seeds=1, add_options=options)
    lrs = [float(x) for x in a.lrs.split(",")]
    precisions = a.precisions.split(",")
    remedies = a.remedies.split(",")
    unknown = [r for r in remedies if r not in REMEDIES] + [p for p in precisions if p not in ("fp32", "bf16")]
    if unknown:
        raise SystemExit(f"unknown remedy or precision: {', '.join(unknown)}")
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "stability" + ("_smoke" if a.smoke else ""))
    base = runner.quickstart_run()
    # A smaller budget than the quick start: 150 steps of 8 x 256 tokens, constant lr after warm-up,
    # so that the high learning rates act for the whole run.
    base.update(steps=150, batch_size=8)
    base["schedule"] = {"kind": "cosine", "warmup_steps": 15}
    base["eval"] = {"every": 150, "windows": 128}
    base["checkpoint"] = {"every": 50, "keep": 1}
    if a.data:
        runner.use_data(base, a.data)
    if a.smoke:
        lrs, precisions, remedies, a.seeds = [0.01], ["bf16"], ["baseline", "g1"], 1
        runner.toy_budget(base)
    variants = []
    for p in precisions:
        for lr in lrs:
            for r in remedies:
                v = dict(REMEDIES[r])
                v["name"] = f"{p}.lr{lr:g}.{r}"
                v["run"] = {"precision": p, "optimizer": {"lr": lr, "min_lr": lr}}
                variants.append(v)
    rows = runner.run_grid(a, base, variants, out, ["--sequences", "4" if a.smoke else "32"])
    head = "| run | final train loss | val loss | loss spikes | skipped steps | max M-Act in training | M-Act at the end |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for v in variants:
        for s in range(a.seeds):
            r = rows[(v["name"], s)]
            lines.append(f"| {v['name']} s{s} | {runner.fmt('{:.4f}', r['final_train_loss'])} | "
                         f"{runner.fmt('{:.4f}', r['val_loss'])} | {r['loss_spikes']} | {r['skipped_steps']} | "
                         f"{runner.fmt('{:.1f}', r['max_m_act_training'])} | {runner.fmt('{:.1f}', r['m_act'])} |")
    runner.write_summary(out, "stability: learning-rate sweep, fp32 and bf16", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
