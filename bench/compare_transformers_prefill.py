#!/usr/bin/env python3
"""gattn's prefill against transformers' on one Hugging Face folder (e.g. `gattn export --format
qwen3_5` of configs/bench/qwen3_5_0.8b.json): a prompt of PROMPT random ids in one forward pass
(transformers: `model(input_ids, use_cache=True)` under `torch.no_grad()`, fp32; gattn:
gattn_bench_decode's prefill), the engines alternated in rounds, medians of tokens/s.
--flush-denormals sets torch.set_flush_denormal(True), as gattn's delta rule does on its threads.

usage: tools/reference/.venv/bin/python bench/compare_transformers_prefill.py --folder DIR
           [--prompt 512] [--threads 1] [--rounds 3] [--flush-denormals]
"""
import argparse
import statistics
import sys
import time

import torch
from bench_decode import add_decode_args, run_gattn
from transformers import AutoModelForCausalLM


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--folder", required=True)
    p.add_argument("--flush-denormals", action="store_true")
    add_decode_args(p)
    args = p.parse_args()
    args.generate = 4  # gattn_bench_decode needs a few decode steps; only its prefill is used
    torch.set_num_threads(args.threads)
    if args.flush_denormals and not torch.set_flush_denormal(True):
        sys.exit("torch.set_flush_denormal: not supported on this CPU")
    model = AutoModelForCausalLM.from_pretrained(args.folder, dtype=torch.float32).eval()
    ids = torch.randint(0, model.config.vocab_size, (1, args.prompt), generator=torch.Generator().manual_seed(1))

    def transformers_prefill():
        with torch.no_grad():
            start = time.perf_counter()
            model(input_ids=ids, use_cache=True)
            return args.prompt / (time.perf_counter() - start)

    transformers_prefill()  # warm-up
    results = {"gattn": [], "transformers": []}
    for r in range(args.rounds):
        for who in (["gattn", "transformers"] if r % 2 == 0 else ["transformers", "gattn"]):
            tps = run_gattn(args, args.folder)["prefill"] if who == "gattn" else transformers_prefill()
            results[who].append(tps)
            print(f"round {r} {who:12s} prefill {tps:7.1f} tok/s", flush=True)
    g, t = (statistics.median(results[w]) for w in ("gattn", "transformers"))
    ratios = [a / b for a, b in zip(results["gattn"], results["transformers"])]
    print(f"\n{type(model).__name__}, {args.threads} thread(s), fp32 (gattn {args.dtype}), prompt {args.prompt}, "
          f"torch {torch.__version__}{', denormals flushed in torch' if args.flush_denormals else ''}")
    print(f"prefill tok/s medians: gattn {g:.1f}, transformers {t:.1f}; gattn / transformers "
          f"{statistics.median(ratios):.2f}x (per round {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
