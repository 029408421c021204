#!/usr/bin/env python3
"""What the Python module costs over the engine (issue 35's targets), in alternated rounds:

- forward: a 1-token Model.forward (median of CALLS calls in a fresh interpreter) against
  gattn_bench_forward_call's median of the same TrainState::forward call in C++; target: at most
  50 us more.
- generate: tokens/s of iterating Model.generate (the tokens after the first piece over the wall
  time of the iteration after it: no prefill, no setup) against `gattn generate --stats` (its decode tokens/s), greedy, same prompt and
  max_tokens; target: at least 95%. Also, within the Python process and so free of the host's
  noise between processes, the engine's decode time (the iterator's timings) as a share of the
  iteration's wall time: what the iterator itself costs.

Both from one CMake build configured with -DGATTN_PYTHON=ON (the module, gattn and
gattn_bench_forward_call, all with the same -fPIC flags).

    python3 bench/python_overhead.py --build build-python --model M --tokenizer T --rounds 7
Prints each round and the medians; --json writes them."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

PY_FORWARD = """
import sys, time, numpy as np, gattn
gattn.set_threads(int(sys.argv[3]))
m = gattn.load(sys.argv[1], dtype="f32")
ids = np.array([3], dtype=np.int32)
calls = int(sys.argv[2]); times = []
for i in range(calls + 3):
    t0 = time.perf_counter(); m.forward(ids); t = time.perf_counter() - t0
    if i >= 3: times.append(t)
print("median_us %.3f" % (sorted(times)[calls // 2] * 1e6))
"""

PY_GENERATE = """
import sys, time, gattn
gattn.set_threads(int(sys.argv[5]))
m = gattn.load(sys.argv[1], tokenizer=sys.argv[2])
it = m.generate(sys.argv[3], max_tokens=int(sys.argv[4]), temperature=0)
next(it)  # the prompt's prefill and the first tokens
t0, first, engine0 = time.perf_counter(), len(it.tokens), it.timings["decode_seconds"]
pieces = list(it)
wall = time.perf_counter() - t0
print(json.dumps({"tokens": len(it.tokens) - first, "decode_s": wall,
                  "engine_s": it.timings["decode_seconds"] - engine0}))
""".replace("import sys,", "import json, sys,")

PROMPT = "And God said, Let there be light: and there was light. And God saw the light"


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} exited {p.returncode}: {p.stderr.strip()}")
    return p


def forward_round(a, env):
    cpp = run([os.path.join(a.build, "gattn_bench_forward_call"), a.model, "1", str(a.calls),
               str(a.threads)], env).stdout
    py = run([sys.executable, "-c", PY_FORWARD, a.model, str(a.calls), str(a.threads)], env).stdout
    us = lambda s: float(re.search(r"median_us ([0-9.]+)", s).group(1))
    return us(cpp), us(py)


def generate_round(a, env):
    cli = run([os.path.join(a.build, "gattn"), "generate", "--checkpoint", a.model, "--tokenizer",
               a.tokenizer, "--prompt", PROMPT, "--max-tokens", str(a.max_tokens),
               "--temperature", "0", "--threads", str(a.threads), "--stats"], env).stderr
    m = re.search(r"generated (\d+) tokens in ([0-9.]+) s", cli)
    py = json.loads(run([sys.executable, "-c", PY_GENERATE, a.model, a.tokenizer, PROMPT,
                         str(a.max_tokens), str(a.threads)], env).stdout)
    return (int(m.group(1)) / float(m.group(2)), py["tokens"] / py["decode_s"],
            py["engine_s"] / py["decode_s"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build-python")
    p.add_argument("--model", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json")
    a = p.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(a.build), "python"))
    rounds = []
    for r in range(a.rounds):
        cpp_us, py_us = forward_round(a, env)
        cli_tps, py_tps, engine_share = generate_round(a, env)
        rounds.append({"cpp_forward_us": cpp_us, "python_forward_us": py_us,
                       "cli_tokens_per_s": cli_tps, "python_tokens_per_s": py_tps,
                       "engine_share": engine_share})
        print(f"round {r}: forward C++ {cpp_us:.1f} us, Python {py_us:.1f} us (+{py_us - cpp_us:.1f}); "
              f"generate CLI {cli_tps:.1f} tok/s, Python {py_tps:.1f} tok/s "
              f"({py_tps / cli_tps:.3f}x; the engine's own decode time {engine_share:.4f} of "
              f"the iteration's)", flush=True)
    extra = statistics.median(x["python_forward_us"] - x["cpp_forward_us"] for x in rounds)
    ratio = statistics.median(x["python_tokens_per_s"] / x["cli_tokens_per_s"] for x in rounds)
    share = statistics.median(x["engine_share"] for x in rounds)
    print(f"median over {a.rounds} rounds: forward +{extra:.1f} us (target <= 50), "
          f"generate {ratio:.3f}x the CLI's tokens/s (target >= 0.95); within one process the "
          f"engine's decode time is {share:.4f} of the iteration's wall time")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": rounds, "forward_extra_us": extra, "generate_ratio": ratio,
                       "engine_share": share}, f,
                      indent=1)


if __name__ == "__main__":
    main()
