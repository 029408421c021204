#!/usr/bin/env python3
"""Decode time per token against the context already in the cache: gattn_bench_decode prefills a
prompt of each length, then times GENERATE greedy steps after it; optionally llama.cpp's llama-bench
on the same model as GGUF (`-d DEPTH -n GENERATE -p 0`: tg after a prefilled depth). Prints a table
and writes an SVG line chart (experiments/svg_plot.py). A Gated DeltaNet layer's decode cost does
not grow with the context; a full-attention layer's does (it reads every key and value).

usage: bench/decode_context.py --model CONFIG|FOLDER [--dtype f32|bf16] [--threads 1]
           [--lengths 128,256,...,8192] [--generate 32] [--llama-bench BIN --gguf FILE]
           [--svg OUT.svg]
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments"))
import svg_plot  # noqa: E402


def gattn_ms_per_token(args, length):
    out = subprocess.run([args.gattn, args.model, "", str(length), str(args.generate), str(args.threads), "1",
                          args.dtype], check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("round 0"))
    return 1e3 * float(re.search(r"decode ([0-9.]+) s", line).group(1)) / args.generate


def llama_ms_per_token(args, length):
    out = subprocess.run([args.llama_bench, "-m", args.gguf, "-p", "0", "-n", str(args.generate), "-d", str(length),
                          "-t", str(args.threads), "-r", "1", "-o", "json"], check=True, capture_output=True,
                         text=True).stdout
    return 1e3 / json.loads(out)[0]["avg_ts"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--gattn", default=os.path.join(HERE, "..", "build", "gattn_bench_decode"))
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lengths", default="128,256,512,1024,2048,4096,8192")
    ap.add_argument("--generate", type=int, default=32)
    ap.add_argument("--llama-bench", help="llama.cpp's llama-bench binary")
    ap.add_argument("--gguf", help="the model as GGUF, for llama-bench")
    ap.add_argument("--svg")
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    series = {"gattn": gattn_ms_per_token}
    if args.llama_bench:
        series["llama.cpp"] = llama_ms_per_token
    results = {name: [] for name in series}
    print(f"| context | " + " | ".join(f"{n} ms/token" for n in series) + " |\n|---|" + "---|" * len(series))
    for length in lengths:
        for name, measure in series.items():  # alternated per length
            results[name].append(measure(args, length))
        print(f"| {length:,} | " + " | ".join(f"{results[n][-1]:.1f}" for n in series) + " |", flush=True)
    if args.svg:
        chart = svg_plot.line_chart([(n, lengths, ys) for n, ys in results.items()],
                                    f"decode after a prefilled context ({args.dtype}, {args.threads} thread(s))",
                                    "context (tokens)", "ms per token")
        with open(args.svg + ".partial", "w") as f:
            f.write(chart)
        os.replace(args.svg + ".partial", args.svg)
        print(f"wrote {args.svg}")


if __name__ == "__main__":
    main()
