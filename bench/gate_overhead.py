#!/usr/bin/env python3
"""The gate's cost: training-step time of G1 elementwise and G1 headwise against the same model
without a gate, in alternated rounds of `gattn bench` (one process per engine and round, the order
rotated each round), each round's median step time, and the ratio per round. Compared with the
gate's FLOP increase by PaLM's count (what `gattn bench` reports).

Usage: gate_overhead.py --gattn build/gattn --config configs/default.json [--batch 16] [--seq 256]
       [--rounds 9] [--steps 7] [--threads 2] [--precision fp32|bf16]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "experiments"))
import stats  # noqa: E402  (paired t statistics, shared with the experiment runners)

GATES = {"none": '{"position": "none"}', "g1_elementwise": '{"position": "sdpa"}',
         "g1_headwise": '{"position": "sdpa", "granularity": "headwise"}'}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gattn", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = ap.parse_args()
    ms = {g: [] for g in GATES}
    flops = {}
    names = list(GATES)
    for r in range(a.rounds):
        for g in names[r % 3:] + names[:r % 3]:
            out = subprocess.run([a.gattn, "bench", "--config", a.config, "--gate", GATES[g], "--batch", str(a.batch),
                                  "--seq", str(a.seq), "--steps", str(a.steps), "--warmup", "2", "--threads",
                                  str(a.threads), "--train-only", "--no-peak", "--json", "--precision", a.precision],
                                 check=True, capture_output=True, text=True).stdout
            j = json.loads(out)
            ms[g].append(j["train_median_ms"])
            flops[g] = j["train_flops_per_token"]
    print(f"config {a.config}, batch {a.batch} x {a.seq}, {a.threads} threads, {a.precision}, "
          f"{a.rounds} rounds of {a.steps} steps")
    for g in names[1:]:
        ratios = [x / y for x, y in zip(ms[g], ms["none"])]
        flop_increase = flops[g] / flops["none"] - 1
        time_increase = statistics.median(ratios) - 1
        print(f"{g}: step time +{100 * time_increase:.2f}% (median of {len(ratios)} paired rounds; "
              f"min {100 * (min(ratios) - 1):+.2f}%, max {100 * (max(ratios) - 1):+.2f}%), "
              f"FLOPs +{100 * flop_increase:.2f}%")
        p = stats.paired([100 * (x - 1) for x in ratios])
        if p["p"] is not None:
            print(f"  per-round overhead: n {p['n']}, mean {p['mean']:+.2f}%, sd {p['sd']:.2f}, t {p['t']:.2f}, "
                  f"p {p['p']:.2g}, 95% CI [{p['ci95'][0]:+.2f}, {p['ci95'][1]:+.2f}]%")
    print(json.dumps({"ms": ms, "flops_per_token": flops}))


if __name__ == "__main__":
    main()
