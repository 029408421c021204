#!/usr/bin/env python3
"""Issue 36's projection of data-parallel training to 8, 64 and 512 nodes (docs/SCALING.md).

Measures on this machine (gattn bench, 2 threads): the training step's tokens/s and fraction of
the sgemm peak at config M and at the 0.6B shape. The dense 1.7B shape's step cannot run here
(27.5 GB of parameters, gradients and AdamW state), so its tokens/s is its FLOPs per token at
the 0.6B shape's fraction of peak. A 64-core node is this machine's FLOP/s per core times 64 at
the same fraction of peak (an assumption: no memory-bandwidth or NUMA loss). Each node runs
TOKENS tokens per step. Communication is gattn's: a reduce-scatter and an all-gather of the fp32
gradient (ZeRO-1: of the weights), each rank sending N - 1 messages of 4P/N bytes each way:
  T_comm = 2 ((N - 1) alpha + (N - 1)/N 4P / beta).
alpha, beta of the two links: from the cited figures in docs/SCALING.md (--links overrides).
Prints a Markdown table: compute, communication, their ratio to the backward pass (2/3 of the
step's FLOPs), the step's efficiency today (no overlap: compute / (compute + communication)) and
with a layer-by-layer overlap (the tied embedding's share e of the gradient is final only at the
end of the backward pass, so e x communication stays exposed, and the rest hides up to the
backward's length), the tokens per node below which communication outlasts the backward pass,
and the memory per rank of parameters, gradients and AdamW's moments without and with ZeRO-1.
  bench/scaling_projection.py [--gattn build/gattn] [--tokens 16384] [--measurements FILE]
(--measurements: the two bench runs' JSON, read if the file exists, else measured and written.)
"""
import argparse
import json
import os
import subprocess
import sys

LINKS = {"10 Gb/s (TCP)": (25e-6, 1.16e9), "100 Gb/s (RDMA)": (1.9e-6, 11.6e9)}
NODES = [8, 64, 512]


def bench(gattn, config, batch, seq, steps):
    out = subprocess.run(
        [gattn, "bench", "--config", config, "--batch", str(batch), "--seq", str(seq),
         "--steps", str(steps), "--warmup", "1", "--threads", "2", "--train-only", "--json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def params_flops_embedding(gattn, config, seq):
    text = subprocess.run([gattn, "params", "--config", config], check=True,
                          capture_output=True, text=True).stdout
    def row(name):
        return int(next(l for l in text.splitlines() if l.split()[:1] == [name]).split()[1]
                   .replace(",", ""))
    total = row("total")
    c = json.load(open(config))
    attention = 6.0 * c["num_hidden_layers"] * c["num_attention_heads"] * c["head_dim"] * seq
    # tied embeddings: the matrix counts once (as the LM head)
    return total, 6.0 * total + attention, row("embedding") / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gattn", default="build/gattn")
    ap.add_argument("--tokens", type=int, default=16384, help="tokens per node per step")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--measurements")
    a = ap.parse_args()
    if a.measurements and os.path.exists(a.measurements):
        m, small = json.load(open(a.measurements))
    else:
        m = bench(a.gattn, "configs/bench/m.json", 4, 256, 3)
        small = bench(a.gattn, "configs/bench/qwen3_0.6b.json", 2, a.seq, 2)
        if a.measurements:
            json.dump([m, small], open(a.measurements, "w"))
    peak = small["sgemm_peak_gflops"] * 1e9  # 2 threads
    print(f"measured: sgemm peak {peak / 1e9:.1f} GFLOP/s on 2 cores; config M "
          f"{m['train_tokens_per_s']:.0f} tok/s ({100 * m['train_fraction_of_peak']:.1f}% of "
          f"peak); 0.6B {small['train_tokens_per_s']:.1f} tok/s "
          f"({100 * small['train_fraction_of_peak']:.1f}% of peak), seq {a.seq}")
    models = []
    for name, config, fraction in [
            ("M", "configs/bench/m.json", m["train_fraction_of_peak"]),
            ("0.6B", "configs/bench/qwen3_0.6b.json", small["train_fraction_of_peak"]),
            ("1.7B", "configs/bench/qwen3_1.7b.json", small["train_fraction_of_peak"])]:
        p, flops, tied = params_flops_embedding(a.gattn, config, a.seq)
        models.append((name, p, flops, tied, fraction))
    print(f"\n{a.tokens} tokens per node per step; T_comm = 2((N-1) alpha + (N-1)/N 4P/beta)\n")
    print("| model | node | link | N | compute | communication | comm / backward | "
          "efficiency: no overlap / layer overlap | comm outlasts the backward below | "
          "memory per rank (ZeRO-1) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, p, flops, tied, fraction in models:
        for node, cores in [("this machine (2 cores)", 2), ("64 cores", 64)]:
            rate = peak / 2 * cores * fraction  # FLOP/s of the step
            compute = a.tokens * flops / rate
            for link, (alpha, beta) in LINKS.items():
                for n in NODES:
                    comm = 2 * ((n - 1) * alpha + (n - 1) / n * 4 * p / beta)
                    backward = compute * 2 / 3
                    exposed = tied * comm + max(0.0, (1 - tied) * comm - backward)
                    print(f"| {name} ({p / 1e6:,.0f} M, tied {100 * tied:.0f}%) | {node} | "
                          f"{link} | {n} | {compute:,.1f} s | {comm:,.2f} s | "
                          f"{comm / backward:.3f} | {100 * compute / (compute + comm):.1f}% / "
                          f"{100 * compute / (compute + exposed):.1f}% | "
                          f"{a.tokens * comm / backward:,.0f} tokens | "
                          f"{16 * p / 2**30:.1f} GiB ({(8 * p + 8 * p / n) / 2**30:.1f} GiB) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
