#!/usr/bin/env python3
"""Runner: native bf16 training against fp32 at the quick start's scale (configs/quickstart):
the baseline and G1 elementwise, each in "precision" fp32 and bf16 (the CPU's bf16 instructions),
>= 3 seeds, paired (same seed: same initial values and data order in both precisions).
Resumable: rerun the same command to continue after an interruption.

  experiments/precision.py [--seeds 3] [--threads 0] [--jobs 1] [--out runs/experiments/precision]

Decision rule, fixed before the runs: per gate, bf16 "lands within the fp32 seed spread" when the
mean paired difference bf16 - fp32 of the validation loss is, in absolute value, at most the
standard deviation over seeds of the fp32 runs' validation loss; otherwise "outside the spread".
Beside it the paired statistics (n, mean, sd, t, two-sided p from Student's t with n - 1 degrees of
freedom, 95% interval); p >= 0.05 reads "not significant", whichever way the rule falls.

Needs the default corpus, tokenizer and shards (scripts/quickstart.sh makes them), or --data.
"""
import os
import statistics

import runner
import stats

GATES = {"baseline": {"position": "none"}, "g1": {"position": "sdpa"}}


def has_bf16_instructions():
    if os.environ.get("GATTN_ISA") == "avx2":  # gattn keeps to its AVX2 kernels (docs/CPU_DISPATCH.md)
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read()
    except OSError:
        return False


def verdict_table(rows, seeds, bf16_label):
    lines = ["| gate | n | fp32 val loss (sd over seeds) | mean Δ bf16 − fp32 | sd | t | p | 95% CI | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for gate in GATES:
        fp32 = [rows[(f"fp32.{gate}", s)]["val_loss"] for s in range(seeds)]
        d = [rows[(f"{bf16_label}.{gate}", s)]["val_loss"] - fp32[s] for s in range(seeds)]
        r = stats.paired(d)
        spread = statistics.stdev(fp32) if seeds > 1 else None
        if r["p"] is None or spread is None:
            lines.append(f"| {gate} | {r['n']} | {fp32[0]:.4f} | {r['mean']:+.4f} | – | – | – | – | untested (1 seed) |")
            continue
        rule = "within the fp32 seed spread" if abs(r["mean"]) <= spread else "outside the fp32 seed spread"
        significance = "not significant" if r["p"] >= 0.05 else "significant"
        lines.append(
            f"| {gate} | {r['n']} | {statistics.mean(fp32):.4f} ({spread:.4f}) | {r['mean']:+.4f} | {r['sd']:.4f} | "
            f"{r['t']:+.2f} | {stats.format_p(r['p'])} | [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}] | {rule}; {significance} |")
    return "\n".join(lines) + "\n"


def main():
    a = runner.arguments(__doc__, default_seeds=3)
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "precision" + ("_smoke" if a.smoke else ""))
    base = runner.quickstart_run()
    base["eval"] = {"every": base["steps"], "windows": 0}  # the whole validation split, once
    base["checkpoint"] = {"every": 100, "keep": 1}
    if a.data:
        runner.use_data(base, a.data)
    # Without the instructions (a smoke test elsewhere) the emulation stands in, and says so.
    bf16_label, bf16 = ("bf16", "bf16") if has_bf16_instructions() else ("bf16_emulated", "bf16_emulated")
    gates = GATES
    if a.smoke:
        gates = {"g1": GATES["g1"]}
        a.seeds = 1
        runner.toy_budget(base)
    variants = [{"name": f"{label}.{gate}", "gate": g, "run": {"precision": precision}}
                for label, precision in (("fp32", "fp32"), (bf16_label, bf16)) for gate, g in gates.items()]
    rows = runner.run_grid(a, base, variants, out, ["--sequences", "4" if a.smoke else "64"])
    text = runner.summary_table(rows, variants, a.seeds, variants[0]["name"])
    if not a.smoke:
        text += "\n" + verdict_table(rows, a.seeds, bf16_label)
    for key, label, f in (("val_loss", "val loss", "{:.4f}"), ("f_attn", "F-Attn", "{:.4f}")):
        text += f"\n{label} per seed:\n\n" + runner.per_seed_table(rows, variants, a.seeds, key, f)
    text += "\nWhere the massive activations sit (first 64 validation windows):\n\n" + runner.max_activation_table(out, variants, a.seeds)
    runner.write_summary(out, f"precision: {bf16_label} against fp32 at the quick-start scale", text)


if __name__ == "__main__":
    main()
