"""What a gate costs at decode time: one model shape with no gate, G1 elementwise and G1 headwise,
all three in one process (build/gattn_bench_gate_decode) and decoded in turns of 8 tokens, so the
shared machine's drift over minutes slows every model alike; each round prefills the prompt into
each model and decodes GENERATE tokens per model. Medians over rounds, and the overhead set
beside the gate's share of the bytes a decode step reads (its weights).

The verdict rests on the paired per-round overheads (a gated model's decode time over the
baseline's in the same round, minus 1): n, mean, sd, t, two-sided p and the 95% interval
(experiments/stats.py). Against the issue's targets (elementwise: overhead <= its share of the
bytes + 1 point; headwise: <= 1%), decided before the runs: "met" if the interval's upper end is
within the allowance, "not met" if its lower end is above it, "not resolved" otherwise.
(Until 2026-12-01 each model ran as its own process, one after another; rounds then drifted by
more than the effect.)

usage: python3 bench/decode_gate_overhead.py [--config configs/bench/qwen3_0.6b.json]
           [--prompt 512] [--generate 128] [--threads 1] [--rounds 3] [--dtype f32|bf16]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

from bench_decode import ROOT, add_decode_args

sys.path.insert(0, os.path.join(ROOT, "experiments"))
from stats import paired  # noqa: E402
GATES = {"none": '{"position": "none"}',
         "G1 elementwise": '{"position": "sdpa"}',
         "G1 headwise": '{"position": "sdpa", "granularity": "headwise"}'}


def run_interleaved(args):
    """{gate name: [(prefill tok/s, decode tok/s) per round]}, {gate name: parameters}."""
    out = subprocess.run([args.bench, args.config, str(args.prompt), str(args.generate),
                          str(args.threads), str(args.rounds), args.dtype, *GATES.values()],
                         check=True, capture_output=True, text=True).stdout
    names = list(GATES)
    params = {names[int(i)]: int(n) for i, n in re.findall(r"model (\d+): (\d+) parameters", out)}
    results = {name: [] for name in names}
    for r, i, prefill, decode in re.findall(
            r"round (\d+) model (\d+): prefill ([0-9.]+) s .*, decode ([0-9.]+) s", out):
        results[names[int(i)]].append((args.prompt / float(prefill), args.generate / float(decode)))
        print(f"round {r} {names[int(i)]:15s} prefill {results[names[int(i)]][-1][0]:7.1f} tok/s  "
              f"decode {results[names[int(i)]][-1][1]:6.2f} tok/s", flush=True)
    return results, params


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=os.path.join(ROOT, "configs/bench/qwen3_0.6b.json"))
    p.add_argument("--bench", default=os.path.join(ROOT, "build/gattn_bench_gate_decode"))
    add_decode_args(p)
    args = p.parse_args()
    results, params = run_interleaved(args)
    print(f"\nmedians over {args.rounds} rounds, models in turns, {args.threads} thread(s), "
          f"{args.dtype} weights, prompt {args.prompt}, generate {args.generate}")
    print("| gate | parameters (M) | bytes share | decode tok/s | decode overhead | "
          "prefill tok/s | prefill overhead |")
    print("|---|---|---|---|---|---|---|")
    base_prefill = statistics.median(x[0] for x in results["none"])
    base_decode = statistics.median(x[1] for x in results["none"])
    for name, values in results.items():
        prefill = statistics.median(x[0] for x in values)
        decode = statistics.median(x[1] for x in values)
        share = params[name] / params["none"] - 1
        print(f"| {name} | {params[name] / 1e6:.2f} | {100 * share:+.1f}% | {decode:.2f} | "
              f"{100 * (base_decode / decode - 1):+.1f}% | {prefill:.1f} | "
              f"{100 * (base_prefill / prefill - 1):+.1f}% |")
    print_paired(results, params)


def print_paired(results, params):
    """The paired per-round decode overheads of each gate, and the verdict against its target."""
    print("\npaired per-round decode overhead (gated time / baseline time - 1, same round), %:")
    print("| gate | n | mean | sd | t | p | 95% interval | allowed | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in [n for n in results if n != "none"]:
        diffs = [100 * (base[1] / gated[1] - 1) for base, gated in zip(results["none"], results[name])]
        s = paired(diffs)
        share = 100 * (params[name] / params["none"] - 1)
        allowed = share + 1 if "elementwise" in name else 1.0
        if s["ci95"] is None:
            print(f"| {name} | {s['n']} | {s['mean']:+.2f} | | | | | {allowed:.1f} | untested (n < 2) |")
            continue
        low, high = s["ci95"]
        verdict = "met" if high <= allowed else "not met" if low > allowed else "not resolved"
        print(f"| {name} | {s['n']} | {s['mean']:+.2f} | {s['sd']:.2f} | {s['t']:.2f} | "
              f"{s['p']:.2g} | [{low:+.2f}, {high:+.2f}] | {allowed:.1f} | {verdict} |")


if __name__ == "__main__":
    main()
