#!/usr/bin/env python3
"""Runner 4, long context: models trained at context T (the core runner's baseline and G1 runs,
T = 256) evaluated at T, 2T, 4T and 8T with plain RoPE, NTK-aware scaling and YaRN (factor =
length / T), on the same first tokens of the validation split at every length, and their
passkey-retrieval accuracy by length. Runs experiments/core.py first if its runs are missing.
Resumable: each evaluation is kept in a JSON file.

  experiments/long_context.py [--seeds 3] [--threads 0] [--out runs/experiments/long_context]
"""
import json
import os
import statistics
import subprocess
import sys

import runner
import stats

MODELS = ["baseline", "g1_elementwise"]
SCALINGS = ["none", "ntk", "yarn"]


def scaling_json(kind, factor, trained):
    if kind == "none" or factor == 1:
        return None
    s = {"rope_type": kind, "factor": factor}
    if kind == "yarn":
        s["original_max_position_embeddings"] = trained
    return json.dumps(s)


def main():
    a = runner.arguments(__doc__, default_seeds=3,
                         add_options=lambda ap: ap.add_argument("--core", default=None, help="the core runner's folder"))
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "long_context" + ("_smoke" if a.smoke else ""))
    if a.smoke:
        a.seeds = 1
    core = a.core or os.path.join(runner.ROOT, "runs", "experiments", "core" + ("_smoke" if a.smoke else ""))
    need = [os.path.join(core, "runs", f"{m}-s{s}", "result.json") for m in MODELS for s in range(a.seeds)]
    if not all(os.path.exists(p) for p in need):
        forwarded = ["--out", core, "--seeds", str(a.seeds), "--threads", str(a.threads), "--gattn", a.gattn]
        forwarded += (["--smoke"] if a.smoke else []) + (["--data", a.data] if a.data else [])
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "core.py")] + forwarded, check=True)
    first = json.load(open(os.path.join(core, "runs", f"{MODELS[0]}-s0", "run.json")))
    trained, val = first["data"]["seq_len"], first["data"]["val"]
    tokenizer = first["data"].get("tokenizer")
    lengths = [trained * m for m in (1, 2, 4, 8)]
    budget = 16 * trained if a.smoke else 65536  # target tokens per length: the same stream prefix
    os.makedirs(out, exist_ok=True)
    results = {}
    for m in MODELS:
        for s in range(a.seeds):
            ckpt = os.path.join(core, "runs", f"{m}-s{s}", "train")
            for length in lengths:
                for kind in SCALINGS:
                    scaling = scaling_json(kind, length // trained, trained)
                    if scaling is None and kind != "none":
                        continue
                    path = os.path.join(out, f"eval.{m}-s{s}.{length}.{kind}.txt")
                    cmd = [a.gattn, "eval", "--checkpoint", ckpt, "--data", val, "--seq", str(length),
                           "--windows", str(max(1, budget // length)), "--batch", "1"]
                    text = runner.output_once(path, cmd + (["--rope-scaling", scaling] if scaling else []), a.threads)
                    loss = float(text.split("loss ")[1].split()[0])
                    results[(m, s, length, kind)] = loss
            if tokenizer:
                path = os.path.join(out, f"passkey.{m}-s{s}.json")
                runner.output_once(path + ".txt", [a.gattn, "passkey", "--checkpoint", ckpt, "--tokenizer", tokenizer,
                                                   "--lengths"] + [str(x) for x in lengths] +
                                   ["--trials", "2" if a.smoke else "20", "--out", path], a.threads)
                for r in json.load(open(path)):
                    results[(m, s, r["length"], "passkey")] = r["accuracy"]
    lines = ["| length | " + " | ".join(f"{m} {k}" for k in SCALINGS for m in MODELS) + " | passkey " +
             " | passkey ".join(MODELS) + " |", "|" + "---|" * (1 + len(SCALINGS) * len(MODELS) + len(MODELS))]
    for length in lengths:
        cells = [str(length)]
        for k in SCALINGS:
            for m in MODELS:
                xs = [results[(m, s, length, "none" if length == trained else k)] for s in range(a.seeds)]
                cells.append(f"{statistics.mean(xs):.4f}" + (f" ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else ""))
        for m in MODELS:
            xs = [results.get((m, s, length, "passkey")) for s in range(a.seeds)]
            cells.append("–" if None in xs else f"{statistics.mean(xs):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n\n" + extrapolation_tables(results, a.seeds, trained, lengths[-1])
    runner.write_summary(out, f"long context: trained at T = {trained}, val loss (nats/token) by length", text)


def extrapolation_tables(results, seeds, trained, longest):
    """Markdown: per seed the loss at the longest length minus the loss at T (baseline; G1) for
    each RoPE scaling, then the paired difference of those growths, G1 - baseline, with Holm over
    the scalings."""
    base, gated = MODELS
    growth = {(m, s, k): results[(m, s, longest, k)] - results[(m, s, trained, "none")]
              for m in MODELS for s in range(seeds) for k in SCALINGS}
    lines = [f"Loss at {longest} minus loss at {trained}, per seed ({base}; {gated}):", "",
             "| RoPE | " + " | ".join(f"seed {s}" for s in range(seeds)) + " |", "|---|" + "---|" * seeds]
    for k in SCALINGS:
        lines.append(f"| {k} | " + " | ".join(f"{growth[(base, s, k)]:+.4f}; {growth[(gated, s, k)]:+.4f}"
                                              for s in range(seeds)) + " |")
    comparisons = [(f"{k}: {gated} − {base}",
                    stats.paired([growth[(gated, s, k)] - growth[(base, s, k)] for s in range(seeds)]))
                   for k in SCALINGS]
    return "\n".join(lines) + "\n\n" + stats.paired_table(f"Loss growth from {trained} to {longest}", comparisons)


if __name__ == "__main__":
    main()
