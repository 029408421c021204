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
Prints a Markdown table: compute, communication, the window the overlapped reduction has (the
blocks' backward pass, after the LM head's: 2/3 of the FLOPs that are not the LM head's, which
are 6 V C per token), the step's efficiency without overlap (compute / (compute +
communication)) and with the overlap as built (train/backward_reduction.h: the reduction starts
when the LM head's backward ends, the tied embedding's gradient then complete but for the rows
of the step's ids, and hides up to the window; the last block's share of the values (one
block's average: the non-embedding parameters over 2 L) goes after the pass: exposed =
max(communication - window, communication x that share)), the
tokens per node below which communication outlasts the window, and the memory per rank of
parameters, gradients and AdamW's moments without and with ZeRO-1. The model assumes the link
moves the bytes without taking the cores' time (a NIC's DMA); kernel TCP on this 2-core machine
does not (docs/SCALING.md, the overlap measured).
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


def params_flops_head(gattn, config, seq):
    text = subprocess.run([gattn, "params", "--config", config], check=True,
                          capture_output=True, text=True).stdout
    def row(name):
        return int(next(l for l in text.splitlines() if l.split()[:1] == [name]).split()[1]
                   .replace(",", ""))
    total = row("total")
    c = json.load(open(config))
    attention = 6.0 * c["num_hidden_layers"] * c["num_attention_heads"] * c["head_dim"] * seq
    # tied embeddings: the matrix counts once (as the LM head)
    flops = 6.0 * total + attention
    embedding = c["vocab_size"] * c["hidden_size"] * (1 if c.get("tie_word_embeddings") else 2)
    last_block = (total - embedding) / (2 * c["num_hidden_layers"]) / total
    return total, flops, 6.0 * c["vocab_size"] * c["hidden_size"] / flops, last_block


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
        p, flops, head, last_block = params_flops_head(a.gattn, config, a.seq)
        models.append((name, p, flops, head, last_block, fraction))
    print(f"\n{a.tokens} tokens per node per step; T_comm = 2((N-1) alpha + (N-1)/N 4P/beta)\n")
    print("| model | node | link | N | compute | communication | comm / window | "
          "efficiency: no overlap / overlapped | comm outlasts the window below | "
          "memory per rank (ZeRO-1) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, p, flops, head, last_block, fraction in models:
        for node, cores in [("this machine (2 cores)", 2), ("64 cores", 64)]:
            rate = peak / 2 * cores * fraction  # FLOP/s of the step
            compute = a.tokens * flops / rate
            for link, (alpha, beta) in LINKS.items():
                for n in NODES:
                    comm = 2 * ((n - 1) * alpha + (n - 1) / n * 4 * p / beta)
                    window = compute * (1 - head) * 2 / 3
                    exposed = max(comm - window, comm * last_block)
                    print(f"| {name} ({p / 1e6:,.0f} M, LM head {100 * head:.0f}% of FLOPs) | "
                          f"{node} | {link} | {n} | {compute:,.1f} s | {comm:,.2f} s | "
                          f"{comm / window:.3f} | {100 * compute / (compute + comm):.1f}% / "
                          f"{100 * compute / (compute + exposed):.1f}% | "
                          f"{a.tokens * comm / window:,.0f} tokens | "
                          f"{16 * p / 2**30:.1f} GiB ({(8 * p + 8 * p / n) / 2**30:.1f} GiB) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
