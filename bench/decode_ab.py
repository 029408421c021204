#!/usr/bin/env python3
"""Two gattn_bench_decode binaries (say main before and after a change) in alternated rounds: per
case the ratio new/old of the prefill and of the decode rate of each round, and their medians
(BENCHMARKS.md "Before and after ...").

    bench/decode_ab.py --old OLD_BENCH_DECODE --new NEW_BENCH_DECODE [--rounds 3]
                       [--config configs/bench/qwen3_0.6b.json] [--prompt 256] [--generate 32]
(from the repository root; each run is one round of gattn_bench_decode on 2 threads)"""
import argparse
import re
import statistics
import subprocess


def rates(binary, config, prompt, generate, dtype):
    out = subprocess.run([binary, config, "", str(prompt), str(generate), "2", "1", dtype],
                         capture_output=True, text=True, check=True).stdout
    prefill = float(re.search(r"^prefill ([0-9.]+) tok/s", out, re.M).group(1))
    decode = float(re.search(r"^decode\s+([0-9.]+) tok/s", out, re.M).group(1))
    return prefill, decode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--config", default="configs/bench/qwen3_0.6b.json")
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--generate", type=int, default=32)
    a = parser.parse_args()
    for dtype in ("f32", "bf16"):
        ratios = {"prefill": [], "decode": []}
        for r in range(a.rounds):
            order = [("old", a.old), ("new", a.new)]
            got = {label: rates(binary, a.config, a.prompt, a.generate, dtype)
                   for label, binary in (order if r % 2 == 0 else order[::-1])}
            for i, what in enumerate(("prefill", "decode")):
                ratios[what].append(got["new"][i] / got["old"][i])
            print(f"round {r + 1} {dtype}: prefill old {got['old'][0]:.1f} new {got['new'][0]:.1f}"
                  f" tok/s, decode old {got['old'][1]:.2f} new {got['new'][1]:.2f} tok/s",
                  flush=True)
        for what, values in ratios.items():
            print(f"{dtype} {what} new/old: median {statistics.median(values):.3f} "
                  f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} rounds)")


if __name__ == "__main__":
    main()
