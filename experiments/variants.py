#!/usr/bin/env python3
"""Runner 2, variants: every gate of the paper's Table 1 (rows 5-15) and its ablations
(input-independent, NS-sigmoid, parameter-free SiLU, per-head RMSNorm at G1, additive identity)
against the baseline, >= 3 seeds, paired, on the Bigram-Backcopy sink regime of sink.py (smaller
budget than core). Resumable.

  experiments/variants.py [--seeds 3] [--regime long_1k] [--threads 0] [--out runs/experiments/variants]
"""
import os
import statistics

import runner
import sink
import stats

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
# The paper's figures (../shared/paper.md): Table 1 row, PPL, and where given gate score, M-Act, F-Attn.
PAPER = {
    "baseline": ("1", 6.026, None, 1053, 0.467), "g1_sdpa": ("5", 5.761, 0.116, 94, 0.048),
    "g2_value": ("6", 5.820, 0.221, 125, 0.297), "g3_key": ("7", 6.016, None, None, None),
    "g4_query": ("8", 5.981, None, None, None), "g5_dense": ("9", 6.017, None, None, None),
    "g1_headwise": ("10", 5.792, 0.172, 98, 0.073), "g2_headwise": ("11", 5.808, None, None, None),
    "g1_head_shared": ("12", 5.801, 0.271, 286, 0.301), "g2_head_shared": ("13", 5.867, None, None, None),
    "g1_additive_silu": ("14", 5.821, None, None, None), "g1_silu": ("15", 5.822, None, None, None),
    "g1_input_independent": ("–", 5.917, 0.335, 471, 0.364), "g1_ns_sigmoid": ("–", 5.900, 0.653, 892, 0.451),
    "g1_silu_only": ("–", 5.975, None, None, None), "g1_head_rmsnorm": ("–", 5.847, None, None, None),
    "g1_additive_identity": ("–", 5.882, None, None, None),
}


def paper_table(rows, variants, seeds):
    """Markdown: our paired effects (mean difference, two-sided p and Holm-adjusted p over the
    variants against the one baseline) next to the paper's figures for each gate."""
    head = ["variant", "row", "+params", "Δ val loss (p; Holm p)", "F-Attn", "Δ F-Attn (p; Holm p)", "gate score",
            "M-Act", "paper PPL (Δ)", "paper gate", "paper M-Act", "paper F-Attn"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = [rows[("baseline", s)] for s in range(seeds)]

    def mean(name, key, f):
        xs = [rows[(name, s)][key] for s in range(seeds) if rows[(name, s)][key] is not None]
        return runner.fmt(f, statistics.mean(xs)) if xs else "–"

    def effects(key, f):
        """{variant: 'mean (p; Holm p)'} against the baseline, Holm over the variants."""
        comparisons = {label.split(" − ")[0]: c for label, c in runner.paired_against(rows, variants, seeds, "baseline", key)}
        adjusted = dict(zip(comparisons, stats.holm([c["p"] for c in comparisons.values()])))
        return {n: f.format(c["mean"]) + ("" if c["p"] is None else f" ({c['p']:.3f}; {adjusted[n]:.3f})")
                for n, c in comparisons.items()}

    loss, f_attn = effects("val_loss", "{:+.4f}"), effects("f_attn", "{:+.3f}")
    for v in variants:
        n = v["name"]
        row, ppl, gate, m_act, paper_f_attn = PAPER[n]
        own = [rows[(n, s)] for s in range(seeds)]
        cells = [n, row, f"{own[0]['parameters'] - base[0]['parameters']:+,}", loss.get(n, "–"),
                 mean(n, "f_attn", "{:.3f}"), f_attn.get(n, "–"), mean(n, "gate_score", "{:.3f}"),
                 mean(n, "m_act", "{:,.0f}"),
                 f"{ppl:.3f} ({100 * (ppl / PAPER['baseline'][1] - 1):+.1f}%)",
                 runner.fmt("{:.3f}", gate), runner.fmt("{:,}", m_act), runner.fmt("{:.3f}", paper_f_attn)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
                         f"{sink.REGIMES[a.regime][0]}\n\n" + paper_table(rows, variants, a.seeds) + "\n" +
                         runner.summary_table(rows, variants, a.seeds, "baseline") +
                         "\nF-Attn per seed:\n\n" + runner.per_seed_table(rows, variants, a.seeds, "f_attn", "{:.3f}") +
                         "\nVal loss per seed:\n\n" + runner.per_seed_table(rows, variants, a.seeds, "val_loss", "{:.4f}"))


if __name__ == "__main__":
    main()
