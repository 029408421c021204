#!/usr/bin/env python3
"""The gate's cost in training: step time of G1 elementwise and G1 headwise against the same model
without a gate, all three in one process (build/gattn_bench_gate_train) and trained in turns of
one optimizer step each, the order turning every round, so that the shared machine's drift over
seconds and minutes slows every model alike. Compared with the gate's FLOP increase by PaLM's
count (what `gattn bench` reports).

The verdict rests on the paired per-round overheads (a gated model's step time over the
baseline's in the same round, minus 1): n, mean, sd, t, two-sided p and the 95% interval
(experiments/stats.py). Against issue 14's targets (elementwise: overhead <= its FLOP increase +
1 point; headwise: <= 1%), decided before the runs (2026-12-02): "met" if the interval's upper end
is within the allowance, "not met" if its lower end is above it, "not resolved" otherwise.
(Until 2026-12-02 each model ran as its own `gattn bench` process, one after another; rounds then
moved by -20% to +39%, many times the margins.)

Usage: gate_overhead.py [--config configs/default.json] [--batch 16] [--seq 256] [--rounds 15]
       [--threads 2] [--precision fp32|bf16] [--bench build/gattn_bench_gate_train]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import stats  # noqa: E402  (paired t statistics, shared with the experiment runners)

GATES = {"none": '{"position": "none"}', "g1_elementwise": '{"position": "sdpa"}',
         "g1_headwise": '{"position": "sdpa", "granularity": "headwise"}'}


def run_interleaved(a):
    """{gate: [step seconds per round]}, {gate: FLOPs per token}."""
    out = subprocess.run([a.bench, a.config, str(a.batch), str(a.seq), str(a.threads), str(a.rounds),
                          a.precision, *GATES.values()], check=True, capture_output=True, text=True).stdout
    names = list(GATES)
    flops = {names[int(i)]: float(f) for i, f in re.findall(r"model (\d+): \d+ parameters, ([0-9.e+]+) FLOPs", out)}
    seconds = {name: [] for name in names}
    for _, i, s in re.findall(r"round (\d+) model (\d+): step ([0-9.]+) s", out):
        seconds[names[int(i)]].append(float(s))
    return seconds, flops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "build/gattn_bench_gate_train"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/default.json"))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = ap.parse_args()
    if a.rounds < 2:
        ap.error("--rounds must be at least 2 (a paired interval needs two rounds)")
    seconds, flops = run_interleaved(a)
    print(f"config {a.config}, batch {a.batch} x {a.seq}, {a.threads} threads, {a.precision}, "
          f"{a.rounds} rounds of one step per model, models in turns")
    print(f"baseline step: median {1e3 * statistics.median(seconds['none']):.1f} ms "
          f"(min {1e3 * min(seconds['none']):.1f}, max {1e3 * max(seconds['none']):.1f})")
    print("| gate | FLOPs | median step ms | n | mean overhead | sd | t | p | 95% interval | allowed | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for g in list(GATES)[1:]:
        flop_increase = 100 * (flops[g] / flops["none"] - 1)
        allowed = flop_increase + 1 if g == "g1_elementwise" else 1.0
        p = stats.paired([100 * (x / y - 1) for x, y in zip(seconds[g], seconds["none"])])
        low, high = p["ci95"]
        verdict = "met" if high <= allowed else "not met" if low > allowed else "not resolved"
        print(f"| {g} | +{flop_increase:.2f}% | {1e3 * statistics.median(seconds[g]):.1f} | {p['n']} | "
              f"{p['mean']:+.2f}% | {p['sd']:.2f} | {p['t']:.2f} | {p['p']:.2g} | [{low:+.2f}, {high:+.2f}] | "
              f"{allowed:.2f} | {verdict} |")


if __name__ == "__main__":
    main()
