#!/usr/bin/env python3
"""Runner 3, stability: a learning-rate sweep up to where the baseline breaks, the baseline
against G1 and the paper's other remedies (sandwich norm, block-output clipping at 100 and 300),
in fp32 and in bf16 (GEMM inputs rounded to bf16; "bf16" here runs the engine's bf16_emulated
mode, which made the recorded runs, "bf16_native" its native bf16), on the default corpus. Reports per run the
final loss, loss spikes (a step whose loss exceeds 1.5x the mean of the previous 20), skipped
non-finite steps, and M-Act during training and at the end, with SVG plots of the loss and M-Act
curves (OUT/plots). The summary covers every finished run in OUT, so invocations with other --lrs,
--precisions or --seeds add to it. Resumable.

  experiments/stability.py [--seeds 2] [--lrs 0.01,0.1,0.3,1] [--precisions fp32,bf16,bf16_native]
                           [--remedies baseline,g1,sandwich,clip100,clip300] [--threads 0]

Needs the default corpus, tokenizer and shards (scripts/quickstart.sh makes them), or --data.
"""
import array
import collections
import json
import math
import os
import statistics
import struct

import runner
import stats
import svg_plot

REMEDIES = {
    "baseline": {"gate": {"position": "none"}},
    "g1": {"gate": {"position": "sdpa"}},
    "sandwich": {"gate": {"position": "none"}, "model": {"sandwich_norm": True}},
    "clip100": {"gate": {"position": "none"}, "model": {"block_output_clip": 100}},
    "clip300": {"gate": {"position": "none"}, "model": {"block_output_clip": 300}},
}

# The sweep's precision labels and the run configs' "precision" they train with.
PRECISIONS = {"fp32": "fp32", "bf16": "bf16_emulated", "bf16_native": "bf16"}


def main():
    def options(ap):
        ap.add_argument("--lrs", default="0.01,0.1,0.3,1")
        ap.add_argument("--precisions", default="fp32,bf16")
        ap.add_argument("--remedies", default=",".join(REMEDIES))

    a = runner.arguments(__doc__, default_seeds=2, add_options=options)
    lrs = [float(x) for x in a.lrs.split(",")]
    precisions = a.precisions.split(",")
    remedies = a.remedies.split(",")
    unknown = [r for r in remedies if r not in REMEDIES] + [p for p in precisions if p not in PRECISIONS]
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
                v["run"] = {"precision": PRECISIONS[p], "optimizer": {"lr": lr, "min_lr": lr}}
                variants.append(v)
    runner.run_grid(a, base, variants, out, ["--sequences", "4" if a.smoke else "32"])
    rows = finished_runs(out)
    plots = write_plots(out, rows)
    runner.write_summary(out, "stability: learning-rate sweep, fp32 and bf16",
                         scale_line(base["data"]["train"]) +
                         pivot(rows, "val_loss", "{:.3f}", "val loss (mean over n seeds, 1 where not marked; "
                               "loss spikes over all seeds in brackets)") + "\n" +
                         pivot(rows, "max_m_act_training", "{:.3g}", "peak |h| during training (mean over seeds; not the paper's M-Act)") +
                         "\n" + paired_tables(rows) + "\n" + "".join(f"![{p}](plots/{p})\n" for p in plots) + "\n" +
                         per_run_table(rows))


def scale_line(shard):
    """Markdown: ln V (uniform prediction) and the unigram entropy of the training shard (a
    gattn token shard: src/io/token_shard.h), the losses of a model that learnt nothing and of one
    that learnt token frequencies only."""
    with open(shard, "rb") as f:
        header = f.read(64)
        if len(header) < 64 or header[:8] != b"GATTNTOK":
            raise SystemExit(f"{shard}: not a gattn token shard (magic GATTNTOK)")
        token_bytes, tokens = struct.unpack_from("<IQ", header, 12)
        vocab = struct.unpack_from("<I", header, 32)[0]
        ids = array.array("H" if token_bytes == 2 else "I")
        ids.frombytes(f.read(tokens * token_bytes))
    counts = collections.Counter(ids)
    entropy = -sum(c / tokens * math.log(c / tokens) for c in counts.values())
    return (f"For scale: ln V = {math.log(vocab):.2f} nats (uniform prediction), the unigram entropy of "
            f"the training shard {entropy:.2f} nats ({tokens:,} tokens)\n\n")


def finished_runs(out):
    """Every finished run in OUT (also those of earlier invocations with other --lrs or
    --precisions), keyed (precision, lr, remedy) -> [rows over seeds]."""
    rows = {}
    folder = os.path.join(out, "runs")
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "result.json")
        if os.path.exists(path):
            with open(path) as f:
                row = json.load(f)
            precision, rest = row["variant"].split(".lr", 1)  # e.g. fp32.lr0.1.g1
            lr, remedy = rest.rsplit(".", 1)
            row["train_dir"] = os.path.join(folder, name, "train")
            rows.setdefault((precision, float(lr), remedy), []).append(row)
    return dict(sorted(rows.items(), key=lambda kv: (kv[0][0] != "fp32", kv[0][1], list(REMEDIES).index(kv[0][2]))))


def pivot(rows, key, f, title):
    """Markdown: learning rates down, remedies across, per precision."""
    remedies = [r for r in REMEDIES if any(k[2] == r for k in rows)]
    lines = [f"{title}\n", "| precision | lr | " + " | ".join(remedies) + " |", "|---|---|" + "---|" * len(remedies)]
    for precision, lr in dict.fromkeys((p, lr) for p, lr, _ in rows):
        cells = []
        for r in remedies:
            rs = rows.get((precision, lr, r), [])
            xs = [x[key] for x in rs if x[key] is not None]
            cell = runner.fmt(f, statistics.mean(xs)) if xs else "–"
            if rs and key == "val_loss":
                cell += f" ({sum(x['loss_spikes'] for x in rs)})"
            cells.append(cell + (f" n={len(rs)}" if len(rs) > 1 else ""))
        lines.append(f"| {precision} | {lr:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paired_tables(rows):
    """Markdown, per precision with >= 2 seeds somewhere: each remedy's val loss minus the
    baseline's at the same lr and seed, per seed, then the paired statistics with Holm over every
    comparison of that precision (remedies x learning rates against their baselines)."""
    text = ""
    for precision in dict.fromkeys(p for p, _, _ in rows):
        comparisons, lines = [], []
        for (p, lr, remedy), runs in rows.items():
            if p != precision or remedy == "baseline":
                continue
            base = {r["seed"]: r["val_loss"] for r in rows.get((p, lr, "baseline"), [])}
            own = {r["seed"]: r["val_loss"] for r in runs}
            seeds = sorted(s for s in own if s in base and own[s] is not None and base[s] is not None)
            if len(seeds) < 2:
                continue
            differences = [own[s] - base[s] for s in seeds]
            label = f"lr {lr:g}: {remedy} − baseline"
            comparisons.append((label, stats.paired(differences)))
            lines.append(f"| {label} | " + ", ".join(f"s{s} {d:+.3f}" for s, d in zip(seeds, differences)) + " |")
        if comparisons:
            text += (f"Val loss against the baseline at the same lr and seed, {precision}, per seed:\n\n"
                     "| comparison | per seed |\n|---|---|\n" + "\n".join(lines) + "\n\n" +
                     stats.paired_table(f"Val loss, {precision}", comparisons, digits=3) + "\n")
    return text


def per_run_table(rows):
    lines = ["| run | final train loss | val loss | loss spikes | skipped steps | peak \\|h\\| in training | last step's max \\|h\\| |",
             "|---|---|---|---|---|---|---|"]
    for runs in rows.values():
        for r in runs:
            lines.append(f"| {r['variant']} s{r['seed']} | {runner.fmt('{:.4f}', r['final_train_loss'])} | "
                         f"{runner.fmt('{:.4f}', r['val_loss'])} | {r['loss_spikes']} | {r['skipped_steps']} | "
                         f"{runner.fmt('{:.1f}', r['max_m_act_training'])} | {runner.fmt('{:.1f}', r['m_act'])} |")
    return "\n".join(lines) + "\n"


def running_mean(values, window):
    """The mean of the finite values among each value and the window - 1 before it (None if none)."""
    out = []
    for i in range(len(values)):
        finite = [v for v in values[max(0, i - window + 1):i + 1] if v is not None and math.isfinite(v)]
        out.append(statistics.mean(finite) if finite else None)
    return out


def write_plots(out, rows):
    """Per (precision, lr): the training loss (10-step running mean) and M-Act of each remedy's
    seed 0 against the step, as SVG files in OUT/plots. Returns their names."""
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    names = []
    for precision, lr in dict.fromkeys((p, lr) for p, lr, _ in rows):
        curves = []
        for (p, l, remedy), runs in rows.items():
            if (p, l) == (precision, lr) and runs[0]["seed"] == 0:
                steps = runner.read_metrics(os.path.join(runs[0]["train_dir"], "metrics.jsonl"))
                xs = [m["step"] for m in steps]
                smooth = running_mean([m.get("loss") for m in steps], 10)
                curves.append((remedy, xs, smooth, [m.get("max_abs_hidden") for m in steps]))
        for what, index, log_y in (("loss", 2, False), ("m_act", 3, True)):
            name = f"stability_{precision}_lr{lr:g}_{what}.svg"  # as committed in experiments/plots
            label = "training loss (10-step mean)" if what == "loss" else "M-Act (max |hidden|)"
            with open(os.path.join(out, "plots", name), "w") as f:
                f.write(svg_plot.line_chart([(c[0], c[1], c[index]) for c in curves],
                                            f"{precision}, lr {lr:g}: {label}, seed 0", "step", label, log_y))
            names.append(name)
    return names


def self_check():
    """paired_tables on made-up rows: two seeds pair, a one-seed cell and a missing baseline seed
    are left out, Holm runs over the table's rows."""
    def run(seed, loss):
        return {"seed": seed, "val_loss": loss}
    rows = {("fp32", 0.1, "baseline"): [run(0, 6.0), run(1, 6.2)],
            ("fp32", 0.1, "g1"): [run(0, 5.7), run(1, 5.8)],
            ("fp32", 0.3, "baseline"): [run(0, 6.5)],
            ("fp32", 0.3, "g1"): [run(0, 6.4), run(1, 6.3)],
            ("bf16", 0.1, "baseline"): [run(0, 6.0)], ("bf16", 0.1, "g1"): [run(0, 5.9)]}
    text = paired_tables(rows)
    assert "| lr 0.1: g1 − baseline | s0 -0.300, s1 -0.400 |" in text, text
    assert "lr 0.3" not in text and "bf16" not in text, text
    assert "| lr 0.1: g1 − baseline | 2 | -0.350 | 0.071 | -7.00 | 0.0903 | 0.0903 |" in text, text
    return "stability: paired tables checked"


if __name__ == "__main__":
    main()
