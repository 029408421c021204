#!/usr/bin/env python3
"""Runner 16, a mixture of experts against dense models (issue 33's experiment). Written, with its
rule, family and stopping rule, before its first run; RESULTS.md section 16 repeats the plan.

Does a small MoE model beat a dense model of its active size, and how far does it fall short of a
dense model of its total size? (The MoE literature's expectation for both: MoE between them.)

Arms, on the default corpus (the quick start's data, width, attention with G1, batch), 800 steps
(cosine over 800 steps, 20 warmup, lr 3e-3, min lr 3e-4, as section 15), final val loss on the
whole validation split, `gattn analyze --sequences 64` of the final checkpoint:
  moe           configs/moe.json: every layer 8 SwiGLU experts of width 256, top-2 (renormalised),
                no shared expert (the paper's 15A2B form), load-balancing loss coefficient 0.01
                (Switch Transformer's; micro_batch scope, which with grad_accum 1 is the whole
                step's batch)
  dense_active  configs/default.json: MLP width 512 = 2 x 256, the MoE model's active parameters
  dense_total   configs/default.json with MLP width 2048 = 8 x 256: its total parameters
Seeds 70, 71, 72 (never used before), paired: a seed gives every arm the same data order.

Primary family, fixed now, Holm over its 2 rows, two-sided paired t, n = 3, on the final val loss:
  moe − dense_active  (expected < 0: more parameters at the same compute help)
  moe − dense_total   (expected > 0: routing is worse than using every parameter for every token)
Verdict per row (stats.verdict): Holm p < 0.05 in the expected direction **reproduced**, in the
other **contradicted**, otherwise **not significant** (n = 3: critical t 4.30, only large effects).
Descriptive, no verdict: M-Act per arm; the MoE arm's router per layer (entropy / ln 8, largest
load / balanced, dead experts) from `gattn analyze`, its final load-balancing loss and each arm's
training tokens/s.

Stopping rule: 3 seeds per arm, no interim verdicts, no exclusions: a run that fails is resumed;
one that still fails (or diverges to a non-finite loss) is reported as such, never dropped.
Resumable after any interruption; 1 thread while the other core builds.

  experiments/moe.py [--threads 1 --jobs 1] [--out runs/experiments/moe] [--data D] [--smoke]
"""
import json
import os

import runner
import stats

SEEDS = [70, 71, 72]
STEPS = 800


def model_config(name, **fields):
    with open(os.path.join(runner.ROOT, "configs", name)) as f:
        return dict(json.load(f), **fields)


ARMS = [
    {"name": "moe", "model": model_config("moe.json")},
    {"name": "dense_active", "model": model_config("default.json")},
    {"name": "dense_total", "model": model_config("default.json", intermediate_size=2048)},
]


def router_row(analysis):
    """(mean entropy ratio, largest load ratio, dead experts) over the MoE layers, or Nones."""
    moe = analysis.get("moe")
    if not moe:
        return None, None, None
    return moe["entropy_ratio"], moe["max_load_ratio"], moe["dead_experts"]


def last_router_loss(out, arm, seed):
    """The load-balancing loss of the run's last step, kept in final_router_loss.json of the run
    folder: restore_rows.py keeps a run's JSON files, not its training metrics."""
    folder = os.path.join(out, "runs", f"{arm}-s{seed}")
    kept = os.path.join(folder, "final_router_loss.json")
    if not os.path.exists(kept):
        steps = runner.read_metrics(os.path.join(folder, "train", "metrics.jsonl"))
        with open(kept + ".partial", "w") as f:
            json.dump({"router_aux_loss": steps[-1].get("router_aux_loss") if steps else None}, f)
        os.replace(kept + ".partial", kept)
    with open(kept) as f:
        return json.load(f)["router_aux_loss"]


def per_seed_rows(out, rows, seeds):
    text = ("| arm | seed | val loss | M-Act | router entropy / ln 8 | largest load / balanced | "
            "dead experts | load-balancing loss | tokens/s | parameters |\n")
    text += "|---|---|---|---|---|---|---|---|---|---|\n"
    for arm in ARMS:
        for s in seeds:
            row = rows[(arm["name"], s)]
            with open(os.path.join(out, "runs", f"{arm['name']}-s{s}", "analysis.json")) as f:
                entropy, load, dead = router_row(json.load(f))
            text += (f"| {arm['name']} | {s} | {row['val_loss']:.4f} | {row['m_act']:.2f} | "
                     f"{runner.fmt('{:.4f}', entropy)} | {runner.fmt('{:.3f}', load)} | "
                     f"{runner.fmt('{}', dead)} | {runner.fmt('{:.5f}', last_router_loss(out, arm['name'], s))} | "
                     f"{row['tokens_per_s']:,.0f} | {row['parameters']:,} |\n")
    return text


def main():
    a = runner.arguments(__doc__, default_seeds=len(SEEDS))
    out, base, seeds, rows = runner.long_run_grid(a, "moe", ARMS, SEEDS, STEPS)

    text = f"{base['steps']} steps per run, seeds {seeds[0]}-{seeds[-1]}; per run:\n\n"
    text += per_seed_rows(out, rows, seeds)
    primary = [("val loss: moe − dense_active", runner.contrast(rows, seeds, "moe", "dense_active", "val_loss"), -1),
               ("val loss: moe − dense_total", runner.contrast(rows, seeds, "moe", "dense_total", "val_loss"), +1)]
    text += "\n" + stats.paired_table("The primary family", [(label, t) for label, t, _ in primary])
    adjusted = stats.holm([t["p"] for _, t, _ in primary])
    for (label, t, direction), p in zip(primary, adjusted):
        text += f"- {label}: **{stats.verdict(p, t['mean'], direction)}**\n"
    scale = [(f"M-Act: moe − {b}", runner.contrast(rows, seeds, "moe", b, "m_act")) for b in ("dense_active", "dense_total")]
    text += "\n" + stats.paired_table("Massive activations (descriptive, no verdict)", scale)
    runner.write_summary(out, "moe: a mixture of experts against dense models (RESULTS.md section 16)", text)


if __name__ == "__main__":
    main()
