#!/usr/bin/env python3
"""Runner 2, variants: every gate of the paper's Table 1 (rows 5-15) and its ablations
(input-independent, NS-sigmoid, parameter-free SiLU, per-head RMSNorm at G1, additive identity)
against the baseline, >= 3 seeds, paired, on the Bigram-Backcopy sink regime of sink.py (smaller
budget than core). Resumable.

  experiments/variants.py [--seeds 3] [--regime long_1k] [--threads 0] [--out runs/experiments/variants]
"""
import os

import runner
import sink

GATES = {
    "baseline": {"position": "none"},
    "g1_sdpa": {"position": "sdpa"},  # row 5
    "g2_value": {"position": "value"},  # rows 6-9
    "g3_key": {"position": "key"},
    "g4_query": {"position": "query"},
    "g5_dense": {"position": "dense"},
    "g1_headwise": {"position": "sdpa", "granularity": "headwise"},  # rows 10-11
    "g2_headwise": {"position": "value", "granularity": "headwise"},
    "g1_head_shared": {"position": "sdpa", "sharing": "head_shared"},  # rows 12-13
    "g2_head_shared": {"position": "value", "sharing": "head_shared"},
    "g1_additive_silu": {"position": "sdpa", "activation": "silu", "mode": "additive"},  # row 14
    "g1_silu": {"position": "sdpa", "activation": "silu"},  # row 15
    "g1_input_independent": {"position": "sdpa", "kind": "input_independent"},
    "g1_ns_sigmoid": {"position": "sdpa", "kind": "ns_sigmoid"},
    "g1_silu_only": {"position": "sdpa", "kind": "silu_only"},
    "g1_head_rmsnorm": {"position": "sdpa", "kind": "head_rmsnorm"},
    "g1_additive_identity": {"position": "sdpa", "activation": "identity", "mode": "additive"},
}


def main():
    a = runner.arguments(__doc__, default_seeds=3,
                         add_options=lambda ap: ap.add_argument("--regime", default="long_1k", choices=list(sink.REGIMES)))
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "variants" + ("_smoke" if a.smoke else ""))
    base = runner.merged(sink.RUN, sink.REGIMES[a.regime][1])
    gates = dict(GATES)
    if a.smoke:
        gates, a.seeds = {k: GATES[k] for k in ("baseline", "g2_value")}, 1
        runner.toy_budget(base)
    data = sink.bigram_backcopy_data(a, out)
    runner.use_data(base, data)
    variants = [{"name": name, "gate": gate} for name, gate in gates.items()]
    rows = runner.run_grid(a, base, variants, out, ["--sequences", "4" if a.smoke else "64"])
    runner.write_summary(out, f"variants: every gate on the Bigram-Backcopy regime '{a.regime}'",
                         f"{sink.REGIMES[a.regime][0]}\n\n" + runner.summary_table(rows, variants, a.seeds, "baseline"))


if __name__ == "__main__":
    main()
