"""Shared by the decode comparisons: their common flags, and one round of build/gattn_bench_decode
read back from its output."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_decode_args(parser):
    """--gattn, --prompt, --generate, --threads, --rounds, --dtype."""
    parser.add_argument("--gattn", default=os.path.join(ROOT, "build/gattn_bench_decode"))
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--generate", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    parser.add_argument("--gattn-dtype", choices=["f32", "bf16", "bf16-gemm"], default=None,
                        help="gattn_bench_decode's DTYPE (default --dtype); bf16-gemm: the same bf16 "
                        "weights, prefill on the CPU's bf16 GEMM (the CLI's default for bf16 weights)")


def run_gattn(args, model, gate=""):
    """One round of gattn_bench_decode on a config or model folder: prefill and decode tok/s,
    parameters, and the decode bound from the bandwidth it measured."""
    out = subprocess.run([args.gattn, model, gate, str(args.prompt), str(args.generate),
                          str(args.threads), "1", getattr(args, "gattn_dtype", None) or args.dtype],
                         check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("round 0"))
    return {"prefill": args.prompt / float(re.search(r"prefill ([0-9.]+) s", line).group(1)),
            "decode": args.generate / float(re.search(r"decode ([0-9.]+) s", line).group(1)),
            "parameters": int(re.search(r"([0-9]+) parameters", out).group(1)),
            "bound": float(re.search(r"bandwidth bound ([0-9.]+) tok/s", out).group(1))}
