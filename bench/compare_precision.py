#!/usr/bin/env python3
"""gattn's training step in bf16 (the CPU's bf16 instructions) against its own fp32 step on the
same model, batch and threads: `gattn bench --precision fp32` and `--precision bf16` alternate in
rounds (which goes first alternates too), each run's median step is taken, and the fp32 / bf16
ratio of each round is reported with its spread.

Usage: compare_precision.py [--gattn build/gattn] --config configs/bench/m.json [--gate JSON]
       [--batch 8] [--seq 1024] [--threads 2] [--rounds 3] [--steps 3] [--warmup 1]
"""
import argparse
import json
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gattn", default="build/gattn")
    ap.add_argument("--config", required=True)
    ap.add_argument("--gate", default="")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()

    def bench(precision):
        command = [a.gattn, "bench", "--config", a.config, "--batch", str(a.batch), "--seq", str(a.seq),
                   "--threads", str(a.threads), "--steps", str(a.steps), "--warmup", str(a.warmup),
                   "--json", "--train-only", "--no-peak", "--precision", precision]
        if a.gate:
            command += ["--gate", a.gate]
        return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)

    ms = {"fp32": [], "bf16": []}
    ratios = []
    info = {}
    for r in range(a.rounds):
        order = ["fp32", "bf16"] if r % 2 == 0 else ["bf16", "fp32"]
        for p in order:
            info = bench(p)
            ms[p].append(info["train_median_ms"])
        ratios.append(ms["fp32"][-1] / ms["bf16"][-1])
        print(f"round {r + 1}/{a.rounds}: fp32 {ms['fp32'][-1]:.1f} ms, bf16 {ms['bf16'][-1]:.1f} ms, "
              f"ratio {ratios[-1]:.2f}", file=sys.stderr)
    print(f"config {a.config} gate {info['gate']}, batch {a.batch} x {a.seq}, {a.threads} threads, "
          f"{a.steps} steps after {a.warmup} warm-up per run")
    for p in ("fp32", "bf16"):
        print(f"{p:<6} median step {statistics.median(ms[p]):10.1f} ms")
    print(f"bf16 speed-up over fp32: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, "
          f"max {max(ratios):.2f} over {len(ratios)} alternated rounds)")
    print(json.dumps({"fp32_ms": ms["fp32"], "bf16_ms": ms["bf16"], "speedup": ratios}))


if __name__ == "__main__":
    main()
