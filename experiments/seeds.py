#!/usr/bin/env python3
"""Runner 9b, the powered seeds: the plan of RESULTS.md section 9, written before its runs.
Regime long_1k (1 layer), {baseline, G1, input-independent, NS-sigmoid, additive identity,
head-shared G1} x 12 seeds, in the variants runner's folders (so seeds 0-2 of the gates that
variants.py or mechanism.py trained are reused, not retrained), and the five planned
comparisons of F-Attn with Holm over those five; the val loss beside it as a secondary reading.
The verdict is decided only once every planned seed is in; before that the summary says how
many seeds each comparison has. Resumable (seeds outermost, so partial results are paired).

  experiments/seeds.py [--seeds 12] [--jobs 2 --threads 1] [--out runs/experiments/variants]
"""
import os

import runner
import sink
import stats
import variants

PLANNED_SEEDS = 12
NAMES = ["baseline", "g1_sdpa", "g1_input_independent", "g1_ns_sigmoid", "g1_additive_identity", "g1_head_shared"]
# (candidate, reference): the five comparisons of section 9, in its order.
COMPARISONS = [("g1_sdpa", "baseline"), ("g1_sdpa", "g1_input_independent"), ("g1_sdpa", "g1_ns_sigmoid"),
               ("g1_head_shared", "baseline"), ("g1_additive_identity", "baseline")]


def finished_seeds(out, seeds):
    """The seeds in which every planned variant has finished (training and analysis)."""
    return [s for s in range(seeds)
            if all(os.path.exists(os.path.join(out, "runs", f"{n}-s{s}", "result.json")) for n in NAMES)]


def planned_table(rows, seeds, key, label, digits):
    comparisons = [(f"{c} − {r}", stats.paired(runner.differences(rows, c, r, seeds, key))) for c, r in COMPARISONS]
    return stats.paired_table(label, comparisons, digits)


def verdict(rows, seeds):
    """Per comparison, the header's rule on F-Attn: reproduced / contradicted need Holm p < 0.05.
    The paper's direction is lower F-Attn for every planned candidate (G1 0.048 against
    input-independent 0.364, NS-sigmoid 0.451 and the baseline 0.467; head-shared G1 0.301)."""
    tests = [stats.paired(runner.differences(rows, c, r, seeds, "f_attn")) for c, r in COMPARISONS]
    adjusted = stats.holm([t["p"] for t in tests])
    lines = []
    for (c, r), t, h in zip(COMPARISONS, tests, adjusted):
        lines.append(f"- {c} − {r}: mean {t['mean']:+.3f}, Holm p {stats.format_p(h)}: "
                     f"**{stats.verdict(h, t['mean'], -1)}**")
    # No "observed power": at the measured effect it is a function of p and adds nothing.
    return "\n".join(lines) + "\n"


def main():
    a = runner.arguments(__doc__, default_seeds=PLANNED_SEEDS)
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "variants" + ("_smoke" if a.smoke else ""))
    base = runner.merged(sink.RUN, sink.REGIMES["long_1k"][1])
    planned = PLANNED_SEEDS
    if a.smoke:  # the whole plan at toy size: 2 seeds, all planned
        a.seeds = planned = 2
        runner.toy_budget(base)
    runner.use_data(base, sink.bigram_backcopy_data(a, out))
    grid = [{"name": n, "gate": variants.GATES[n]} for n in NAMES]
    rows = runner.run_grid(a, base, grid, out, ["--sequences", "4" if a.smoke else "64"])
    done = finished_seeds(out, a.seeds)
    text = (f"{sink.REGIMES['long_1k'][0]}; seeds {len(done)} of the {planned} planned.\n\n" +
            runner.summary_table(rows, grid, a.seeds, "baseline").split("\n\n")[0] + "\n\n" +
            planned_table(rows, a.seeds, "f_attn", "F-Attn (decides)", 3) + "\n" +
            planned_table(rows, a.seeds, "val_loss", "val loss (secondary)", 4) + "\n" +
            "F-Attn per seed:\n\n" + runner.per_seed_table(rows, grid, a.seeds, "f_attn", "{:.4f}") + "\n" +
            "val loss per seed:\n\n" + runner.per_seed_table(rows, grid, a.seeds, "val_loss", "{:.5f}") + "\n")
    if len(done) >= planned:
        text += "Verdicts (section 9's plan, the header's rule):\n\n" + verdict(rows, a.seeds)
    else:
        text += f"Verdicts: not decided ({len(done)} of {planned} planned seeds).\n"
    summary = os.path.join(out, "seeds")
    os.makedirs(summary, exist_ok=True)
    runner.write_summary(summary, "seeds: the planned comparisons of regime long_1k (RESULTS.md section 9)", text)


if __name__ == "__main__":
    main()
