#!/usr/bin/env python3
"""Runner 9, power: how many seeds the sink comparisons need. From the effects and the paired
sds that section 2 of RESULTS.md measured on regime long_1k (3 seeds; F-Attn), the seeds giving
80% power to a paired two-sided t-test at alpha 0.05, and at 0.01 (Holm's first step over the
five comparisons below is alpha / 5), and the power that 8 seeds give. Where section 2 recorded
no paired sd (gate against gate), the largest paired sd it recorded (0.155) stands in: a
conservative guess, said so in the table. Simulated with a fixed seed (stats.power).

  experiments/power.py [--out runs/experiments/power]
"""
import argparse
import os

import runner
import stats

# (comparison, effect, sd, where the numbers come from)
EFFECTS = [
    ("G1 − baseline", -0.167, 0.147, "section 2: Δ F-Attn (sd)"),
    ("G1 − input-independent", 0.035 - 0.147, 0.155, "section 2 means; sd assumed"),
    ("G1 − NS-sigmoid", 0.035 - 0.216, 0.155, "section 2 means; sd assumed"),
    ("head-shared G1 − baseline", -0.175, 0.148, "section 2: Δ F-Attn (sd)"),
    ("additive identity − baseline", -0.152, 0.155, "section 2: Δ F-Attn (sd)"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(runner.ROOT, "runs", "experiments", "power"))
    ap.add_argument("--trials", type=int, default=5000)
    a = ap.parse_args()
    lines = ["| comparison | effect | sd | effect / sd | seeds for 80% at α 0.05 | at α 0.01 | power of 8 seeds at α 0.05 | at α 0.01 | source |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, effect, sd, source in EFFECTS:
        n05 = stats.seeds_for_power(effect, sd, alpha=0.05, trials=a.trials)
        n01 = stats.seeds_for_power(effect, sd, alpha=0.01, trials=a.trials)
        p05 = stats.power(effect, sd, 8, 0.05, a.trials)
        p01 = stats.power(effect, sd, 8, 0.01, a.trials)
        lines.append(f"| {name} | {effect:+.3f} | {sd:.3f} | {abs(effect) / sd:.2f} | {runner.fmt('{}', n05)} | "
                     f"{runner.fmt('{}', n01)} | {p05:.2f} | {p01:.2f} | {source} |")
    os.makedirs(a.out, exist_ok=True)
    runner.write_summary(a.out, "power: seeds for the sink comparisons of regime long_1k",
                         f"Simulated paired t-tests, {a.trials} trials per cell.\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
