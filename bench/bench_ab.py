#!/usr/bin/env python3
"""Two gattn binaries (say main before and after a change) timed by `gattn bench` in alternated
rounds: per case the ratio new/old of the median training-step time of each round, and its
median, min and max over rounds (BENCHMARKS.md "Before and after ...").

    bench/bench_ab.py --old OLD_GATTN --new NEW_GATTN [--rounds 3] [--new-env VAR=VALUE]...
        [--case "S fp32"]...
(from the repository root; --new-env sets a variable for the new binary only, e.g. GATTN_ISA=avx2;
--case runs only the cases named, default all)"""
import argparse
import json
import os
import statistics
import subprocess

CASES = [("S fp32", ["--config", "configs/default.json", "--steps", "7", "--warmup", "2"]),
         ("S bf16", ["--config", "configs/default.json", "--steps", "7", "--warmup", "2",
                     "--precision", "bf16"]),
         ("M fp32", ["--config", "configs/bench/m.json", "--steps", "3", "--warmup", "1"])]


def step_ms(binary, args, env=None):
    out = subprocess.run([binary, "bench", *args, "--json"], capture_output=True, text=True,
                         check=True, env=env).stdout
    return json.loads(out)["train_median_ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new-env", action="append", default=[], metavar="VAR=VALUE")
    parser.add_argument("--case", action="append", choices=[name for name, _ in CASES])
    a = parser.parse_args()
    cases = [(name, args) for name, args in CASES if not a.case or name in a.case]
    new_env = dict(os.environ, **dict(v.split("=", 1) for v in a.new_env))
    results = {name: [] for name, _ in cases}
    for r in range(a.rounds):
        for name, args in cases:
            order = [("old", a.old, None), ("new", a.new, new_env)]
            times = {label: step_ms(binary, args, env) for label, binary, env in
                     (order if r % 2 == 0 else order[::-1])}
            results[name].append((times["old"], times["new"]))
            print(f"round {r + 1} {name}: old {times['old']:.1f} ms, new {times['new']:.1f} ms, "
                  f"new/old {times['new'] / times['old']:.3f}", flush=True)
    for name, pairs in results.items():
        ratios = [n / o for o, n in pairs]
        print(f"{name}: new/old median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, "
              f"max {max(ratios):.3f}), old median {statistics.median(o for o, _ in pairs):.1f} ms,"
              f" new median {statistics.median(n for _, n in pairs):.1f} ms, {len(pairs)} rounds")


if __name__ == "__main__":
    main()
