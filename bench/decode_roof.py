#!/usr/bin/env python3
"""Decode speed of GGUF files against what bounds it (issue 34: decode >= 75% of min(bandwidth
bound, the integer dot kernel's own roof on L2-resident weights)):
- kernel roof: one token's matrix products at the rates build/gattn_bench_quant_kernels measures
  for each (type, row length) on an L2-resident matrix (one input row): the sum over the file's
  matrices (the output matrix, or the embedding when tied, included; the embedding lookup, norms
  and attention not) of weights / rate, the rate that of one copy of the kernel per thread running
  at once (one single-thread process per core, each on its own matrix in its own L2: no fork or
  join; on this shared host two cores at once do not always give twice one core's rate). The
  table also gives the roof of one copy alone times the threads (perfect scaling), and the ratio
  to it;
- bandwidth bound: gattn_bench_decode's own (the file's weights and the KV cache up to the mean
  generated position read once per token at the read bandwidth it probes in the same process just
  before its rounds: this shared machine's bandwidth moves by 1.5x from minute to minute, so a
  bound probed elsewhere says little);
- measured: build/gattn_bench_decode's decode tokens/s (prompt PROMPT, default 512, then 64
  generated), the file read as stored, the KV cache in fp32 (--kv-dtype f32, gattn's default) or
  bf16 (--kv-dtype bf16: the bytes of llama.cpp's default f16 cache). The kernel roof does not
  count the cache: at the 0.6B shape and 560 positions an fp32 cache is 126 MB a token, a third
  of the Q4_0 file's weights. The last column ("kernel roof + cache") adds the time of reading the
  cache once at the probed bandwidth to the kernel roof's time (what the attention, ~1 flop a
  byte, costs when nothing overlaps it; not a lower bound: a cache read overlapped with the
  kernel-bound matrix products could hide); --prompt 1 measures decode nearly as llama-bench's tg does
  (from an empty cache), where the cache is small.
The kernel rates and the decode are measured in turn, ROUNDS times (this shared machine's rates
move by a third within an hour: a roof measured once at the start and decodes measured minutes
later gave ratios from 58% to 110% for one code); each round gives decode / min(bounds).
Prints one table row per file and thread count: the medians over the rounds, and the ratio's
range.

usage: tools/reference/.venv/bin/python bench/decode_roof.py FILE.gguf... [--threads 1,2]
           [--rounds 3] [--kv-dtype f32|bf16] [--prompt 512] [--json OUT]
(from the repository root; OPENBLAS_CORETYPE as for every bench)"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from gguf import GGUFReader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUANT_BENCH = os.path.join(ROOT, "build", "gattn_bench_quant_kernels")
DECODE_BENCH = os.path.join(ROOT, "build", "gattn_bench_decode")
# gattn_bench_quant_kernels' format names of the GGUF types
NAMES = {"Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_K": "q4_K", "Q6_K": "q6_K"}


def matrices(path):
    """(type name, row length, weights) of each matrix a decoded token multiplies by."""
    tensors = {t.name: t for t in GGUFReader(path).tensors}
    out = []
    for name, t in tensors.items():
        if len(t.shape) != 2 or name == "token_embd.weight" and "output.weight" in tensors:
            continue
        if t.tensor_type.name not in NAMES:
            sys.exit(f"{path}: {name} is {t.tensor_type.name}; the roof covers {', '.join(NAMES)}")
        cols, rows = int(t.shape[0]), int(t.shape[1])
        out.append((NAMES[t.tensor_type.name], cols, rows * cols))
    return out


def kernel_rates(cols, copies):
    """{format: weights/s} of one-row products on an L2-resident matrix of `cols`-value rows:
    `copies` single-thread gattn_bench_quant_kernels processes at once, their rates added."""
    cmd = [QUANT_BENCH, "1", "1", "100", str(cols), "l2"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    rates = {}
    for proc in procs:
        text = proc.communicate()[0]
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode})")
        for line in text.splitlines():
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            if len(c) == 6 and c[3] == "process's" and c[1].startswith("192 x"):
                rates[c[0]] = rates.get(c[0], 0.0) + float(c[4]) * 1e9
    return rates


def decode_rate(path, threads, rounds, kv_dtype, prompt):
    """Median decode tokens/s, the bench's own bandwidth bound (tokens/s) and the seconds a token
    takes to read its KV cache at the bench's probed bandwidth."""
    kv = ["--kv-bf16"] if kv_dtype == "bf16" else []
    text = subprocess.run([DECODE_BENCH, path, "", str(prompt), "64", str(threads), str(rounds),
                           "bf16"] + kv, check=True, capture_output=True, text=True).stdout
    rates = [64 / float(m) for m in re.findall(r"^round \d+:.*decode ([0-9.]+) s", text, re.M)]
    bound = float(re.search(r"bandwidth bound ([0-9.]+) tok/s", text).group(1))
    bandwidth = float(re.search(r"read bandwidth ([0-9.]+) GB/s", text).group(1))
    weights = float(re.search(r"\(([0-9.]+) GB of weights a token\)", text).group(1))
    # bound = bandwidth / (weights + cache): the cache's seconds a token at that bandwidth
    cache_s = max(0.0, 1 / bound - weights / bandwidth)
    return statistics.median(rates), bound, cache_s


def kernel_roof(mats, copies, scale=1):
    """Tokens/s of one token's matrix products at the kernel rates measured now (`copies` at once),
    times `scale`."""
    rates = {cols: kernel_rates(cols, copies) for cols in {c for _, c, _ in mats}}
    return scale / sum(weights / rates[cols][fmt] for fmt, cols, weights in mats)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--kv-dtype", choices=["f32", "bf16"], default="f32",
                   help="the decode's KV cache (bf16: the bytes of llama.cpp's default f16 cache)")
    p.add_argument("--prompt", type=int, default=512,
                   help="prompt tokens before the 64 decoded ones (1: near llama-bench's tg)")
    p.add_argument("--json")
    a = p.parse_args()
    rows = []
    print("| file | threads | decode tok/s | kernel roof tok/s | bandwidth bound tok/s | "
          "decode / min (rounds' min - max) | one copy x threads: roof, decode / min | "
          "kernel roof + cache tok/s, decode / min |")
    print("|---|---|---|---|---|---|---|---|")
    for threads in [int(t) for t in a.threads.split(",")]:
        for path in a.files:
            mats = matrices(path)
            rounds = []
            for _ in range(a.rounds):  # the roof and the decode measured in turn, each round
                roof = kernel_roof(mats, threads)
                scaled = kernel_roof(mats, 1, threads)
                decode, bound, cache_s = decode_rate(path, threads, 1, a.kv_dtype, a.prompt)
                with_cache = 1 / (1 / roof + cache_s)
                rounds.append({"decode": decode, "kernel_roof": roof, "bandwidth_bound": bound,
                               "ratio": decode / min(roof, bound), "scaled_roof": scaled,
                               "scaled_ratio": decode / min(scaled, bound),
                               "roof_with_cache": with_cache,
                               "ratio_with_cache": decode / min(with_cache, bound)})
            row = {"file": path, "threads": threads, "kv_dtype": a.kv_dtype, "prompt": a.prompt,
                   "rounds": rounds}
            for key in ("decode", "kernel_roof", "bandwidth_bound", "ratio", "scaled_roof",
                        "scaled_ratio", "roof_with_cache", "ratio_with_cache"):
                row[key] = statistics.median(r[key] for r in rounds)
            rows.append(row)
            ratios = [r["ratio"] for r in rounds]
            print(f"| {os.path.basename(os.path.dirname(path))}/{os.path.basename(path)} | {threads} | "
                  f"{row['decode']:.1f} | {row['kernel_roof']:.1f} | {row['bandwidth_bound']:.1f} | "
                  f"{100 * row['ratio']:.0f}% ({100 * min(ratios):.0f}-{100 * max(ratios):.0f}%) | "
                  f"{row['scaled_roof']:.1f}, {100 * row['scaled_ratio']:.0f}% | "
                  f"{row['roof_with_cache']:.1f}, {100 * row['ratio_with_cache']:.0f}% |",
                  flush=True)
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
