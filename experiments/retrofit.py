#!/usr/bin/env python3
"""Retrofitting a G1 gate onto a trained baseline: fine-tune the quick start's baseline (seed 0)
on the default corpus with no gate, with a G1 gate started as the identity ("init": "identity":
zero gate weights, o_proj doubled) and with a randomly initialised G1 gate; paired over seeds
(the seed sets the data order and the new gate's initial values).

Decision rule (written before the runs): identity init "avoids the spike" if its first-step loss
equals the ungated model's (|difference| < 1e-3 nats in every seed) and its largest loss in the
first 20 steps is below the random-init arm's with Holm-adjusted p < 0.05; "no worse after" if
the 95% interval of (identity - no gate) final validation loss includes 0 or lies below it.
Otherwise the verdicts are "not shown" / "worse".

    experiments/retrofit.py [--source RUN] [--seeds 3] [--steps 60] [--out runs/retrofit]
"""
import json
import os

import runner
import stats

ARMS = [
    ("no_gate", {"position": "none"}),
    ("g1_identity", {"position": "sdpa", "init": "identity"}),
    ("g1_random", {"position": "sdpa"}),
]
COMPARISONS = [("g1_identity", "no_gate"), ("g1_random", "no_gate"), ("g1_identity", "g1_random")]
METRICS = [("first_loss", "loss at step 1"), ("spike", "max loss, steps 1-20"),
           ("val_loss", "final val loss")]


def options(ap):
    ap.add_argument("--source", default=os.path.join(runner.ROOT, "runs", "quickstart", "baseline-s0"),
                    help="the trained model (a run folder or checkpoint) to fine-tune")
    ap.add_argument("--steps", type=int, default=60)


def source_config(source):
    """The model config of a checkpoint folder, or of a run folder's newest checkpoint."""
    folder = source
    checkpoints = os.path.join(source, "checkpoints")
    if os.path.isdir(checkpoints):
        folder = os.path.join(checkpoints, sorted(os.listdir(checkpoints))[-1])
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def fine_tune(a, arm, gate, seed, out):
    folder = os.path.join(out, "runs", f"{arm}-s{seed}")
    row_file = os.path.join(folder, "result.json")
    if os.path.exists(row_file):
        with open(row_file) as f:
            return json.load(f)
    os.makedirs(folder, exist_ok=True)
    run = runner.quickstart_run()
    if a.data:
        runner.use_data(run, a.data)
    run["model"] = dict(source_config(a.source), gate=gate)
    run["data"]["seq_len"] = min(run["data"]["seq_len"], run["model"]["max_position_embeddings"])
    run.update(steps=a.steps, out=os.path.join(folder, "train"))
    run["schedule"] = {"kind": "cosine", "warmup_steps": 0}
    run["optimizer"]["lr"] = 1e-3
    run["optimizer"]["min_lr"] = 1e-4
    run["eval"] = {"every": a.steps, "windows": 128}
    run["checkpoint"] = {"every": 0, "keep": 1}
    if a.smoke:
        runner.toy_budget(run)
        run["schedule"]["warmup_steps"] = 0
    config = os.path.join(folder, "run.json")
    with open(config, "w") as f:
        json.dump(run, f, indent=2)
    runner.run_cmd([a.gattn, "train", "--config", config, "--seed", str(seed),
                    "--init-from", a.source], os.path.join(folder, "log.txt"), a.threads)
    records = runner.read_metrics(os.path.join(run["out"], "metrics.jsonl"))
    row = {"arm": arm, "seed": seed, "first_loss": records[0]["loss"],
           "spike": max(r["loss"] for r in records[:20]), "val_loss": records[-1]["val_loss"],
           "command": f"gattn train --config {config} --seed {seed} --init-from {a.source}"}
    with open(row_file, "w") as f:
        json.dump(row, f, indent=2)
    return row


def summary(rows, seeds):
    by = {(r["arm"], r["seed"]): r for r in rows}
    lines = ["| metric | " + " | ".join(name for name, _ in ARMS) + " |", "|---" * (len(ARMS) + 1) + "|"]
    for key, label in METRICS:
        means = [sum(by[(arm, s)][key] for s in seeds) / len(seeds) for arm, _ in ARMS]
        lines.append(f"| {label} (mean of {len(seeds)}) | " + " | ".join(f"{m:.4f}" for m in means) + " |")
    for key, label in METRICS:
        comparisons = [(f"{x} − {y}", stats.paired([by[(x, s)][key] - by[(y, s)][key] for s in seeds]))
                       for x, y in COMPARISONS]
        lines += ["", stats.paired_table(label, comparisons).rstrip("\n")]
    lines += ["", "Per seed:", "", "| arm | seed | loss at step 1 | max loss 1-20 | final val loss |",
              "|---|---|---|---|---|"]
    lines += [f"| {r['arm']} | {r['seed']} | {r['first_loss']:.4f} | {r['spike']:.4f} | {r['val_loss']:.4f} |"
              for r in sorted(rows, key=lambda r: (r["arm"], r["seed"]))]
    return "\n".join(lines) + "\n"


def main():
    a = runner.arguments(__doc__, default_seeds=3, add_options=options)
    a.source = os.path.abspath(a.source)
    out = a.out or os.path.join(runner.ROOT, "runs", "retrofit")
    seeds = list(range(1 if a.smoke else a.seeds))
    rows = [fine_tune(a, arm, gate, s, out) for s in seeds for arm, gate in ARMS]
    text = summary(rows, seeds)
    runner.write_summary(out, "Retrofitting a G1 gate onto a trained baseline", text)
    print(text)


if __name__ == "__main__":
    main()
