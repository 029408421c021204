#!/usr/bin/env python3
"""gattn's training step against PyTorch (eager, and torch.compile) on the same model, batch and
thread count: blocks of steps alternate between the engines, each block's median step time is
taken, and the ratio of each pair of blocks is reported with its spread.

--precision bf16 runs gattn's native bf16 GEMMs against PyTorch under
torch.autocast("cpu", torch.bfloat16) (eager, and torch.compile of the autocast model): fp32
master weights and AdamW state in both.

--transformers FORMAT times transformers' own model instead of bench/torch_model.py: the config's
model initialised by `gattn init`, written by `gattn export --format FORMAT --dtype f32` (qwen3,
qwen3_5, qwen3_next) and loaded with AutoModelForCausalLM, so a hybrid's Gated DeltaNet layers run
transformers' torch kernels (torch_chunk_gated_delta_rule, its causal conv fallback).

Usage: compare_torch.py --gattn build/gattn --config configs/default.json [--gate JSON]
       [--batch 16] [--seq 256] [--threads 2] [--rounds 5] [--steps 11] [--no-compile]
       [--precision fp32|bf16] [--transformers qwen3|qwen3_5|qwen3_next]
"""
import argparse
import json
import statistics
import os
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from torch_model import Model  # noqa: E402


def torch_steps(step, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class TransformersModel(torch.nn.Module):
    """transformers' model of a gattn config (gattn init, then gattn export FORMAT), called as
    bench/torch_model.py's Model is: (ids, targets) -> mean cross-entropy."""

    def __init__(self, gattn, config_path, gate, fmt, folder):
        super().__init__()
        from transformers import AutoModelForCausalLM
        init, hf = os.path.join(folder, "init"), os.path.join(folder, "hf")
        init_cmd = [gattn, "init", "--config", config_path, "--out", init, "--seed", "0"]
        subprocess.run(init_cmd + (["--gate", gate] if gate else []), check=True, capture_output=True)
        subprocess.run([gattn, "export", "--checkpoint", init, "--format", fmt, "--dtype", "f32", "--out", hf],
                       check=True, capture_output=True)
        self.model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)
        self.name = type(self.model).__name__

    def forward(self, ids, targets):
        logits = self.model(input_ids=ids).logits
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gattn", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--gate", default="")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=11)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--flush-denormals", action="store_true",
                    help="torch.set_flush_denormal(True), as gattn's delta rule does on its threads")
    ap.add_argument("--transformers", choices=["qwen3", "qwen3_5", "qwen3_next"], default="",
                    help="time transformers' model of the config, exported in this format")
    a = ap.parse_args()
    scratch = tempfile.TemporaryDirectory()
    bf16 = a.precision == "bf16"

    torch.set_num_threads(a.threads)
    if a.flush_denormals and not torch.set_flush_denormal(True):
        sys.exit("torch.set_flush_denormal: not supported on this CPU")
    config = json.load(open(a.config))
    if a.gate:
        config["gate"] = json.loads(a.gate)
    torch.manual_seed(0)
    ids = torch.randint(0, config["vocab_size"], (a.batch, a.seq))
    targets = torch.roll(ids, -1, dims=1)
    targets[:, -1] = -1

    engines = {}
    for name in ["eager"] + ([] if a.no_compile else ["compiled"]):
        if a.transformers:
            model = TransformersModel(a.gattn, a.config, a.gate, a.transformers,
                                      os.path.join(scratch.name, name))
            print(f"torch {name}: transformers {model.name}", file=sys.stderr)
        else:
            model = Model(config, a.seq)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
        forward = torch.compile(model) if name == "compiled" else model

        def step(model=model, opt=opt, forward=forward):
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = forward(ids, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        t0 = time.perf_counter()
        for _ in range(3):  # warm-up (and compilation)
            step()
        print(f"torch {name}: warm-up {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        engines[name] = step

    command = [a.gattn, "bench", "--config", a.config, "--batch", str(a.batch), "--seq", str(a.seq),
               "--threads", str(a.threads), "--steps", str(a.steps), "--warmup", "2", "--json", "--train-only",
               "--precision", a.precision]
    if a.gate:
        command += ["--gate", a.gate]
    ratios = {name: [] for name in engines}
    medians = {name: [] for name in engines}
    medians["gattn"] = []
    info = {}
    for r in range(a.rounds):
        info = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        medians["gattn"].append(info["train_median_ms"])
        for name, step in engines.items():
            ms = torch_steps(step, a.steps)
            medians[name].append(ms)
            ratios[name].append(ms / info["train_median_ms"])
        print(f"round {r + 1}/{a.rounds}: gattn {info['train_median_ms']:.1f} ms, " +
              ", ".join(f"torch {n} {medians[n][-1]:.1f} ms" for n in engines), file=sys.stderr)

    tokens = a.batch * a.seq
    print(f"\nconfig {a.config} gate {info['gate']}, {info['parameters']:,} parameters, batch {a.batch} x {a.seq}, "
          f"{a.threads} threads, {a.precision}{' (torch autocast)' if bf16 else ''}, torch {torch.__version__}, "
          f"OpenBLAS core {info['blas_core']}" +
          (f", transformers' model ({a.transformers} export)" if a.transformers else "") +
          (", torch with denormals flushed" if a.flush_denormals else ""))
    print(f"{'engine':<16}{'median step ms':>16}{'tokens/s':>12}")
    for name, ms in medians.items():
        m = statistics.median(ms)
        print(f"{name:<16}{m:>16.1f}{tokens / m * 1e3:>12.0f}")
    for name, rs in ratios.items():
        print(f"speed-up of gattn over torch {name}: median {statistics.median(rs):.2f}x "
              f"(min {min(rs):.2f}, max {max(rs):.2f} over {len(rs)} alternated rounds of {a.steps} steps)")
    print(json.dumps({"gattn_ms": medians["gattn"], **{f"torch_{n}_ms": medians[n] for n in engines},
                      **{f"speedup_vs_{n}": ratios[n] for n in engines}}))


if __name__ == "__main__":
    main()
