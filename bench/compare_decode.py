"""gattn against Hugging Face transformers' generate on PyTorch: the same model (a Qwen3 with random
weights written once by save_pretrained from --config, or any Hugging Face folder given by --folder,
e.g. `gattn export --format qwen3_5` of configs/bench/moe_3b.json), the same prompt length, tokens
to generate, threads and weight dtype; rounds alternate between the two (the machine is shared and
noisy) and the medians are compared.

gattn: build/gattn_bench_decode on the folder (prefill of PROMPT tokens, then greedy decode
through its KV cache). transformers: prefill = generate(max_new_tokens=1); decode per token =
(generate(max_new_tokens=N, min_new_tokens=N) - prefill) / (N - 1), greedy, its KV cache.

usage (the reference venv has torch and transformers):
  tools/reference/.venv/bin/python bench/compare_decode.py [--config configs/bench/qwen3_0.6b.json
      | --folder DIR] [--prompt 512] [--generate 128] [--threads 1] [--rounds 3] [--dtype f32|bf16]
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import torch
from bench_decode import add_decode_args, run_gattn
from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_model(config_path, folder, dtype):
    with open(config_path) as f:
        c = json.load(f)
    config = Qwen3Config(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
                         intermediate_size=c["intermediate_size"],
                         num_hidden_layers=c["num_hidden_layers"],
                         num_attention_heads=c["num_attention_heads"],
                         num_key_value_heads=c["num_key_value_heads"], head_dim=c["head_dim"],
                         rope_theta=c.get("rope_theta", 1e6),
                         max_position_embeddings=c.get("max_position_embeddings", 4096),
                         tie_word_embeddings=c.get("tie_word_embeddings", False))
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(dtype).eval()
    model.save_pretrained(folder)
    return model


def time_transformers(model, ids, args):
    def run(n):
        start = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                           num_beams=1, eos_token_id=None, pad_token_id=0)
        return time.perf_counter() - start

    prefill = run(1)
    total = run(args.generate)
    return args.prompt / prefill, (args.generate - 1) / (total - prefill)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=os.path.join(ROOT, "configs/bench/qwen3_0.6b.json"))
    p.add_argument("--folder", help="a Hugging Face folder both engines load (instead of --config)")
    add_decode_args(p)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    dtype = torch.float32 if args.dtype == "f32" else torch.bfloat16
    folder = args.folder or tempfile.mkdtemp(prefix="gattn_compare_decode_")
    try:
        if args.folder:
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).eval()
        else:
            model = make_model(args.config, folder, dtype)
        ids = torch.randint(0, model.config.vocab_size, (1, args.prompt),
                            generator=torch.Generator().manual_seed(1))
        results = {"gattn": [], "transformers": []}
        bound = None
        for r in range(args.rounds):
            order = ["gattn", "transformers"] if r % 2 == 0 else ["transformers", "gattn"]
            for who in order:
                if who == "gattn":
                    result = run_gattn(args, folder)
                    prefill, decode, bound = result["prefill"], result["decode"], result["bound"]
                else:
                    prefill, decode = time_transformers(model, ids, args)
                results[who].append((prefill, decode))
                print(f"round {r} {who:12s} prefill {prefill:8.1f} tok/s  decode {decode:6.2f} tok/s",
                      flush=True)
        med = {who: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
               for who, v in results.items()}
        print(f"\nmedians over {args.rounds} alternated rounds, {args.threads} thread(s), "
              f"{args.dtype} weights, prompt {args.prompt}, generate {args.generate}, "
              f"{type(model).__name__}, torch {torch.__version__}")
        print("| engine | prefill tok/s | decode tok/s |")
        print("|---|---|---|")
        for who, (prefill, decode) in med.items():
            print(f"| {who} | {prefill:.1f} | {decode:.2f} |")
        g, t = med["gattn"], med["transformers"]
        print(f"gattn / transformers: prefill {g[0] / t[0]:.2f}x, decode {g[1] / t[1]:.2f}x; "
              f"gattn decode = {100 * g[1] / bound:.0f}% of its bandwidth bound {bound:.2f} tok/s")
    finally:
        if not args.folder:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
