#!/usr/bin/env python3
"""Two gattn_bench_decode binaries (say main before and after a change) in alternated rounds on
one config: per round the ratio new/old of prefill and of decode tokens/s, and their median, min
and max (BENCHMARKS.md "Before and after ...").

    bench/decode_ab.py --old OLD_BENCH --new NEW_BENCH --config CONFIG [--dtype f32|bf16|bf16-gemm]
        [--new-dtype DTYPE] [--rounds 5] [--prompt 512] [--generate 128] [--threads 2]
        [--env VAR=VALUE]... [--new-env VAR=VALUE]... [--pause SECONDS]
(--new-env sets a variable for the new binary only, e.g. GATTN_ISA=avx2; --env for both;
--new-dtype a dtype for the new binary only: one binary, f32 against bf16 weights; --pause sleeps before each run, so that neither binary runs
right after the other has freed its memory)"""
import argparse
import os
import re
import statistics
import subprocess
import time


def rates(binary, a, dtype, env=None):
    """Prefill and decode tokens/s of one round."""
    time.sleep(a.pause)
    out = subprocess.run([binary, a.config, "", str(a.prompt), str(a.generate), str(a.threads),
                          "1", dtype], capture_output=True, text=True, check=True, env=env).stdout
    line = next(l for l in out.splitlines() if l.startswith("round 0"))
    return (float(re.search(r"prefill [0-9.]+ s \(([0-9.]+) tok/s\)", line).group(1)),
            float(re.search(r"decode [0-9.]+ s \(([0-9.]+) tok/s\)", line).group(1)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--dtype", choices=["f32", "bf16", "bf16-gemm"], default="f32")
    parser.add_argument("--new-dtype", choices=["f32", "bf16", "bf16-gemm"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--generate", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--new-env", action="append", default=[], metavar="VAR=VALUE")
    parser.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                        help="set for both binaries")
    a = parser.parse_args()
    old_env = dict(os.environ, **dict(v.split("=", 1) for v in a.env))
    new_env = dict(old_env, **dict(v.split("=", 1) for v in a.new_env))
    new_dtype = a.new_dtype or a.dtype
    pairs = []  # ((old prefill, old decode), (new prefill, new decode))
    for r in range(a.rounds):
        order = [("old", a.old, a.dtype, old_env), ("new", a.new, new_dtype, new_env)]
        got = {label: rates(binary, a, dtype, env) for label, binary, dtype, env in
               (order if r % 2 == 0 else order[::-1])}
        pairs.append((got["old"], got["new"]))
        print(f"round {r + 1}: prefill old {got['old'][0]:.1f} new {got['new'][0]:.1f} tok/s, "
              f"decode old {got['old'][1]:.2f} new {got['new'][1]:.2f} tok/s", flush=True)
    for i, what in enumerate(("prefill", "decode")):
        ratios = [n[i] / o[i] for o, n in pairs]
        print(f"{a.config} {a.dtype}/{new_dtype} {what}: new/old tok/s median {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}), old median "
              f"{statistics.median(o[i] for o, _ in pairs):.2f}, new median "
              f"{statistics.median(n[i] for _, n in pairs):.2f} tok/s, {len(pairs)} rounds")


if __name__ == "__main__":
    main()
