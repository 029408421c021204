#!/usr/bin/env python3
"""Runner 11, confirmation (issue 30, experiment a). Written, with its rule, family and stopping
rule, before its first run; RESULTS.md section 11 repeats the plan.

Regime long_1k (sink.py: 1 layer of 2 heads, Bigram-Backcopy, constant lr 3e-3, no weight decay,
1,000 steps), on seeds 12-23, never used before (sections 0-10 used seeds 0-11). Arms: baseline,
G1 (g1_sdpa), additive identity (g1_additive_identity), head-shared G1 (g1_head_shared) and
per-head RMSNorm at G1 (g1_head_rmsnorm), the gates of variants.py.

Primary metric: F-Attn of the final checkpoint (`gattn analyze --sequences 64`, first query
excluded). Primary family, Holm over these 3, two-sided paired t over the 12 seeds:
  1. g1_sdpa − g1_additive_identity   (the paper's account, sparse beats non-sparse: < 0)
  2. g1_sdpa − g1_head_rmsnorm        (< 0)
  3. g1_head_shared − g1_sdpa         (head-specific beats head-shared: > 0)
Verdict per row: Holm p < 0.05 in the predicted direction: "reproduced"; Holm p < 0.05 in the
other direction: "contradicted"; otherwise "not significant". Secondary family, Holm over 4: each
gated arm − baseline (paper: every one < 0), same verdict words.

No-training part (its own family): every G1 run's final checkpoint analysed with its gate
replaced by a constant, `layer:0:gate=constant:<that run's mean gate score in layer 0>` (the
plain analysis's `layer_mean_score`), against the unmodified model on the same 64 windows. Is it
the per-query variation of the gate that matters? Family, Holm over 2, two-sided one-sample t of
the 12 differences against 0: Δ val loss (the paper's account predicts > 0) and Δ F-Attn. In a
1-layer model the gate acts after the layer's only attention, so Δ F-Attn is 0 by construction:
it is printed and, with zero variance, "untested" (stats.paired returns no p), which leaves Δ val
loss alone in the family.

Stopping rule: n = 12 seeds per arm, fixed; no interim verdicts (the summary says how many seeds
are in until all are). No exclusions: a run that fails is rerun from its last checkpoint (training
is deterministic); a run that still fails leaves the contrasts it enters "untested". Resumable after
any interruption (runner.py); run at 1 thread while the other core builds, never during another
issue's benchmarks.

  experiments/confirm.py [--jobs 1 --threads 1] [--out runs/experiments/confirm] [--smoke]
"""
import os

import runner
import sink
import stats
import variants

SEEDS = list(range(12, 24))
ARMS = ["baseline", "g1_sdpa", "g1_additive_identity", "g1_head_shared", "g1_head_rmsnorm"]
# (candidate, reference, the paper's sign of candidate − reference)
PRIMARY = [("g1_sdpa", "g1_additive_identity", -1), ("g1_sdpa", "g1_head_rmsnorm", -1),
           ("g1_head_shared", "g1_sdpa", +1)]
SECONDARY = [(arm, "baseline", -1) for arm in ARMS[1:]]


def run_seeds(a, base, grid, out, seeds, analyze_args):
    """{(arm, seed): result row}, seeds outermost so that partial results are paired."""
    rows = {}
    for seed in seeds:
        for v in grid:
            print(f"== {v['name']} seed {seed}", flush=True)
            rows[(v["name"], seed)] = runner.train_and_analyze(a, base, v, seed, out, list(analyze_args))
    return rows


def finished(out, seeds):
    return [s for s in seeds
            if all(os.path.exists(os.path.join(out, "runs", f"{n}-s{s}", "result.json")) for n in ARMS)]


def differences(rows, candidate, reference, seeds, key):
    return [rows[(candidate, s)][key] - rows[(reference, s)][key] for s in seeds
            if (candidate, s) in rows and (reference, s) in rows
            and rows[(candidate, s)][key] is not None and rows[(reference, s)][key] is not None]


def verdicts(tests, signs):
    """The rule above, per row of one family."""
    adjusted = stats.holm([t["p"] for t in tests])
    return [stats.verdict(h, t["mean"], sign) for t, h, sign in zip(tests, adjusted, signs)]


def family(rows, seeds, contrasts, key, label, decide):
    comparisons = [(f"{c} − {r}", stats.paired(differences(rows, c, r, seeds, key))) for c, r, _ in contrasts]
    text = stats.paired_table(label, comparisons, 4)
    if decide:
        text += "\n" + "\n".join(f"- {name}: **{word}**" for (name, _), word in
                                 zip(comparisons, verdicts([t for _, t in comparisons], [s for _, _, s in contrasts])))
        text += "\n"
    return text


def constant_gate(a, out, seed, val, seq_len):
    """(Δ val loss, Δ F-Attn) of one G1 run with its gate replaced by its mean score."""
    folder = os.path.join(out, "runs", f"g1_sdpa-s{seed}")
    plain = runner.analyze_once(a, os.path.join(folder, "train"), val, seq_len,
                                os.path.join(folder, "analysis.json"))
    score = plain["layers"][0]["gate"]["layer_mean_score"]
    changed = runner.analyze_once(a, os.path.join(folder, "train"), val, seq_len,
                                  os.path.join(folder, "analysis_constant_gate.json"),
                                  ["--sequences", "4" if a.smoke else "64",
                                   "--intervene", f"layer:0:gate=constant:{score!r}"])
    return score, changed["loss"] - changed["unmodified_loss"], changed["f_attn"] - plain["f_attn"]


def per_seed_table(rows, seeds, key, digits):
    head = "| seed | " + " | ".join(ARMS) + " |\n|---|" + "---|" * len(ARMS) + "\n"
    f = "{:.%df}" % digits
    return head + "".join(f"| {s} | " + " | ".join(runner.fmt(f, rows[(n, s)][key]) if (n, s) in rows else "–"
                                                  for n in ARMS) + " |\n" for s in seeds)


def main():
    a = runner.arguments(__doc__, default_seeds=len(SEEDS))
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "confirm" + ("_smoke" if a.smoke else ""))
    base = runner.merged(sink.RUN, sink.REGIMES["long_1k"][1])
    seeds = SEEDS
    if a.smoke:  # the whole plan at toy size: 2 seeds
        seeds = SEEDS[:2]
        runner.toy_budget(base)
    runner.use_data(base, sink.bigram_backcopy_data(a, out))
    grid = [{"name": n, "gate": variants.GATES[n]} for n in ARMS]
    analyze_args = ["--sequences", "4" if a.smoke else "64"]
    rows = run_seeds(a, base, grid, out, seeds, analyze_args)
    done = finished(out, seeds)
    decide = len(done) == len(seeds)
    text = f"{sink.REGIMES['long_1k'][0]}; seeds {seeds[0]}-{seeds[-1]}: {len(done)} of {len(seeds)} in.\n\n"
    text += "F-Attn per seed (final checkpoint):\n\n" + per_seed_table(rows, seeds, "f_attn", 4) + "\n"
    text += "val loss per seed:\n\n" + per_seed_table(rows, seeds, "val_loss", 5) + "\n"
    text += family(rows, seeds, PRIMARY, "f_attn", "F-Attn, primary family", decide) + "\n"
    text += family(rows, seeds, SECONDARY, "f_attn", "F-Attn, secondary family (against the baseline)", decide) + "\n"
    text += family(rows, seeds, PRIMARY + SECONDARY, "val_loss", "val loss (descriptive, no verdict)", False) + "\n"
    constants = {s: constant_gate(a, out, s, base["data"]["val"], base["data"]["seq_len"]) for s in done}
    text += "G1 with its gate replaced by its layer's mean score (no training), per seed:\n\n"
    text += "| seed | constant score | Δ val loss | Δ F-Attn |\n|---|---|---|---|\n"
    text += "".join(f"| {s} | {c[0]:.5f} | {c[1]:+.6f} | {c[2]:+.6f} |\n" for s, c in constants.items()) + "\n"
    tests = [("Δ val loss", stats.paired([c[1] for c in constants.values()])),
             ("Δ F-Attn", stats.paired([c[2] for c in constants.values()]))]
    text += stats.paired_table("constant gate − G1 (one-sample: the differences against 0)", tests, 6)
    if decide:
        text += "\n" + "\n".join(f"- {name}: **{word}**" for (name, _), word in
                                 zip(tests, verdicts([t for _, t in tests], [+1, +1]))) + "\n"
    else:
        text += f"\nVerdicts: not decided ({len(done)} of {len(seeds)} seeds).\n"
    summary = os.path.join(out, "confirm")
    os.makedirs(summary, exist_ok=True)
    runner.write_summary(summary, "confirm: the confirmation on seeds 12-23 (RESULTS.md section 11)", text)


if __name__ == "__main__":
    main()
