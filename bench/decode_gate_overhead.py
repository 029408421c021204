"""What a gate costs at decode time: build/gattn_bench_decode on one model shape with no gate, G1
elementwise and G1 headwise, rounds alternated (the machine is shared and noisy), medians. The
overhead is set beside the gate's share of the bytes a decode step reads (its weights).

Rounds drift (the machine's load changes over minutes), so the verdict rests on the paired
per-round overheads (a gated model's decode time over the baseline's in the same round, minus 1):
n, mean, sd, t, two-sided p and the 95% interval (experiments/stats.py). Against the issue's
targets (elementwise: overhead <= its share of the bytes + 1 point; headwise: <= 1%), decided
before the runs: "met" if the interval's upper end is within the allowance, "not met" if its
lower end is above it, "not resolved" otherwise.

usage: python3 bench/decode_gate_overhead.py [--config configs/bench/qwen3_0.6b.json]
           [--prompt 512] [--generate 128] [--threads 1] [--rounds 3] [--dtype f32|bf16]
"""
import argparse
import os
import statistics
import sys

from bench_decode import ROOT, add_decode_args, run_gattn

sys.path.insert(0, os.path.join(ROOT, "experiments"))
from stats import paired  # noqa: E402
GATES = {"none": '{"position": "none"}',
         "G1 elementwise": '{"position": "sdpa"}',
         "G1 headwise": '{"position": "sdpa", "granularity": "headwise"}'}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=os.path.join(ROOT, "configs/bench/qwen3_0.6b.json"))
    add_decode_args(p)
    args = p.parse_args()
    results = {name: [] for name in GATES}
    params = {}
    for r in range(args.rounds):
        names = list(GATES) if r % 2 == 0 else list(reversed(GATES))
        for name in names:
            result = run_gattn(args, args.config, GATES[name])
            prefill, decode, params[name] = result["prefill"], result["decode"], result["parameters"]
            results[name].append((prefill, decode))
            print(f"round {r} {name:15s} prefill {prefill:7.1f} tok/s  decode {decode:6.2f} tok/s",
                  flush=True)
    print(f"\nmedians over {args.rounds} alternated rounds, {args.threads} thread(s), {args.dtype} "
          f"weights, prompt {args.prompt}, generate {args.generate}")
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
