#!/usr/bin/env python3
"""Runner 12, trains faster or ends lower? (issue 30, experiment b). Written, with its rule,
family and stopping rule, before its first run; RESULTS.md section 12 repeats the plan.

Section 1's G1 advantage on the default corpus (−0.35 nats) was measured at one learning rate
(3e-3) after 200 steps: it may be a faster start at a rate that suits G1, not a lower end point.

Stage 1, the sweep: the quick start's run (default corpus and model, 200 steps, cosine schedule
with 20 warmup steps, min lr = lr / 10) for lr in {1e-3, 3e-3, 1e-2} x {baseline, G1
(elementwise, after SDPA)} x seeds 30 and 31 (never used before). Each arm's best lr is the one
with the lowest mean final val loss over the two seeds; lrs within 0.01 nats of that lowest count
as tied, and of tied lrs the lowest wins. If either arm's best is 1e-2 (the edge), both arms also
run lr 3e-2 (same seeds) and the best is chosen again over the four.

Stage 2, the seeds: n from a power calculation on the sweep's paired sd: the sd of the per-seed
differences G1 − baseline at each swept lr, pooled (root mean square over the lrs); n = the fewest
seeds from 3 with 80% power for a 0.1-nat difference at two-sided α 0.05 (stats.seeds_for_power),
at most 6 (6 when more would be needed: the summary then says the test is underpowered for 0.1).

Stage 3, the end point: 800 steps (the same schedule stretched: cosine over 800, 20 warmup) at
each arm's best lr, seeds 40 .. 40 + n − 1, final val loss on the whole validation split.

Primary contrast (a family of one): G1 − baseline final val loss of stage 3, two-sided paired t
over the n seeds. Verdict: p < 0.05 and < 0 **reproduced** (G1 ends lower), p < 0.05 and > 0
**contradicted**, otherwise **not significant**. The claims table's perplexity row is judged on
this verdict alone. The sweep's per-lr differences (n = 2) are printed as descriptive only.

No exclusions: a run that fails is resumed; one that still fails (or diverges to a non-finite
loss) keeps its loss as reported (a diverged arm is reported as such, never dropped). Resumable
after any interruption; 1 thread while the other core builds.

  experiments/lr_budget.py [--jobs 1 --threads 1] [--out runs/experiments/lr_budget] [--data D] [--smoke]
"""
import concurrent.futures
import math
import os
import statistics

import runner
import stats

ARMS = {"baseline": {"position": "none"}, "g1": {"position": "sdpa"}}
SWEEP_LRS = [1e-3, 3e-3, 1e-2]
EDGE_LR = 3e-2
SWEEP_SEEDS = [30, 31]
FINAL_SEED0 = 40
TIE = 0.01
EFFECT = 0.1
MOST_SEEDS = 6


def variant(arm, lr):
    return {"name": f"{arm}_lr{lr:g}", "gate": ARMS[arm],
            "run": {"optimizer": {"lr": lr, "min_lr": lr / 10}}}


def train(a, base, out, arm, lr, seeds):
    """{seed: row} of one arm at one lr, --jobs seeds at a time."""
    def one(seed):
        print(f"== {arm} lr {lr:g} seed {seed}", flush=True)
        return runner.train_and_analyze(a, base, variant(arm, lr), seed, out,
                                        ["--sequences", "4" if a.smoke else "64"])

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        return dict(zip(seeds, pool.map(one, seeds)))


def best_lr(means):
    """{lr: mean val loss} -> the lowest lr within TIE of the lowest mean."""
    finite = {lr: m for lr, m in means.items() if m is not None and math.isfinite(m)}
    low = min(finite.values())
    return min(lr for lr, m in finite.items() if m - low < TIE)


def sweep(a, base, out):
    """{arm: {lr: {seed: row}}} of stage 1, with the edge lr added when the rule asks for it."""
    grid = {arm: {lr: train(a, base, out, arm, lr, SWEEP_SEEDS) for lr in SWEEP_LRS} for arm in ARMS}
    if any(best_lr(mean_loss(grid[arm])) == SWEEP_LRS[-1] for arm in ARMS):
        for arm in ARMS:
            grid[arm][EDGE_LR] = train(a, base, out, arm, EDGE_LR, SWEEP_SEEDS)
    return grid


def mean_loss(by_lr):
    return {lr: statistics.fmean(r["val_loss"] for r in rows.values()) for lr, rows in by_lr.items()}


def pooled_sd(grid):
    sds = []
    for lr in grid["baseline"]:
        d = [grid["g1"][lr][s]["val_loss"] - grid["baseline"][lr][s]["val_loss"] for s in SWEEP_SEEDS]
        if all(math.isfinite(x) for x in d):
            sds.append(statistics.stdev(d))
    return math.sqrt(statistics.fmean(x * x for x in sds))


def main():
    a = runner.arguments(__doc__, default_seeds=MOST_SEEDS)
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "lr_budget" + ("_smoke" if a.smoke else ""))
    base = runner.quickstart_run()
    base["eval"] = {"every": base["steps"], "windows": 4 if a.smoke else 0}  # 0: the whole split
    base["checkpoint"] = {"every": 100, "keep": 1}
    if a.data:
        runner.use_data(base, a.data)
    if a.smoke:
        runner.toy_budget(base)
    grid = sweep(a, base, out)
    best = {arm: best_lr(mean_loss(grid[arm])) for arm in ARMS}
    sd = pooled_sd(grid)
    n = stats.seeds_for_power(EFFECT, sd, most=MOST_SEEDS) if sd > 0 else 3
    underpowered = n is None
    n = 2 if a.smoke else (MOST_SEEDS if underpowered else n)
    final = runner.merged(base, {"steps": 4 if a.smoke else 800, "checkpoint": {"every": 2 if a.smoke else 200}})
    final["eval"]["every"] = final["steps"]
    seeds = list(range(FINAL_SEED0, FINAL_SEED0 + n))
    ends = {arm: train(a, final, os.path.join(out, "final"), arm, best[arm], seeds) for arm in ARMS}

    text = "Stage 1, the sweep (200 steps; final val loss per seed):\n\n| arm | lr | " + \
        " | ".join(f"seed {s}" for s in SWEEP_SEEDS) + " | mean |\n|---|---|" + "---|" * (len(SWEEP_SEEDS) + 1) + "\n"
    for arm in ARMS:
        for lr, rows in grid[arm].items():
            text += f"| {arm} | {lr:g} | " + " | ".join(f"{rows[s]['val_loss']:.4f}" for s in SWEEP_SEEDS) + \
                f" | {statistics.fmean(r['val_loss'] for r in rows.values()):.4f} |\n"
    comparisons = [(f"g1 − baseline at lr {lr:g}",
                    stats.paired([grid["g1"][lr][s]["val_loss"] - grid["baseline"][lr][s]["val_loss"] for s in SWEEP_SEEDS]))
                   for lr in grid["baseline"]]
    text += "\n" + stats.paired_table("sweep val loss (descriptive, n = 2)", comparisons)
    text += (f"\nBest lr: baseline {best['baseline']:g}, G1 {best['g1']:g}. Pooled paired sd {sd:.4f}; "
             f"seeds for 80% power at 0.1 nats: {'more than 6 (underpowered; 6 run)' if underpowered else n}.\n\n")
    text += f"Stage 3, the end point ({final['steps']} steps, each arm at its best lr; seeds {seeds[0]}-{seeds[-1]}):\n\n"
    text += "| seed | baseline | G1 | G1 − baseline |\n|---|---|---|---|\n"
    d = []
    for s in seeds:
        b, g = ends["baseline"][s]["val_loss"], ends["g1"][s]["val_loss"]
        d.append(g - b)
        text += f"| {s} | {b:.4f} | {g:.4f} | {g - b:+.4f} |\n"
    test = stats.paired(d)
    text += "\n" + stats.paired_table("final val loss, the primary contrast", [("g1 − baseline", test)])
    text += f"\nVerdict (the rule above, a family of one): **{stats.verdict(test['p'], test['mean'], -1)}**\n"
    runner.write_summary(out, "lr_budget: trains faster or ends lower? (RESULTS.md section 12)", text)


if __name__ == "__main__":
    main()
