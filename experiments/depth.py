#!/usr/bin/env python3
"""Runner 7, depth: does the sink finding of the 1-layer models (the baseline's sink, G1 removing
it, G2 making it stronger) hold with 2 and 3 layers? Bigram-Backcopy regime `long` of sink.py
(constant lr 3e-3, no weight decay, 3,000 steps) at 2 and 3 layers x {baseline, G1, G2
elementwise} x seeds, a checkpoint every 500 steps, each one analysed (the sink's strength
fluctuates during training). Resumable.

Pre-registered rule (experiments/RESULTS.md section 7, committed before the runs): the G2 finding
*generalises* if, at both depths and in >= 2 of 3 seeds, at the final checkpoint, a G2 head puts
> 0.3 on the first token while no head of the same seed's baseline exceeds 0.1; otherwise it is
*limited to 1 layer*. The mean over the last three checkpoints is reported beside it as a
secondary reading, and every sink count is also given at thresholds 0.2 and 0.5.

  experiments/depth.py [--seeds 3] [--depths 2,3] [--jobs 2 --threads 1] [--out runs/experiments/depth]
"""
import os

import runner
import sink
import stats

GATES = {"baseline": {"position": "none"}, "g1": {"position": "sdpa"}, "g2": {"position": "value"}}
CHECKPOINT_EVERY = 500
THRESHOLDS = (0.2, 0.3, 0.5)
G2_HEAD, BASELINE_CEILING = 0.3, 0.1  # the rule's thresholds


def fmt_heads(xs):
    return " ".join(f"{x:.2f}" for x in xs)


def rule_holds(g2_heads, base_heads):
    return max(g2_heads) > G2_HEAD and max(base_heads) <= BASELINE_CEILING


def depth_section(depth, per_run, seeds):
    """Markdown for one depth: per seed and checkpoint the heads' first-token attention, the
    pre-registered reading, and paired F-Attn differences with Holm over the two gates. Runs not
    (yet) trained are left out and named. Returns (text, final verdict, secondary verdict), each
    True, False or None (undecided with the seeds there are)."""
    names = {g: f"{depth}layer.{g}" for g in GATES}
    have = {g: [s for s in range(seeds) if (names[g], s) in per_run] for g in GATES}
    steps = sorted(per_run[(names["baseline"], have["baseline"][0])])
    last3 = steps[-3:]
    text = f"## {depth} layers\n\nFirst-token attention of every head (layer-major), per checkpoint:\n\n"
    text += "| seed | gate | " + " | ".join(f"step {s}" for s in steps) + " | max \\|h\\| (at first token?) |\n"
    text += "|" + "---|" * (len(steps) + 3) + "\n"
    for seed in range(seeds):
        for g, name in names.items():
            if seed in have[g]:
                an = per_run[(name, seed)]
                m, first = runner.where_max(an[steps[-1]])
                text += (f"| {seed} | {g} | " + " | ".join(fmt_heads(runner.head_first_token(an[s])) for s in steps) +
                         f" | {m:,.0f} ({'yes' if first else 'no'}) |\n")
    missing = [f"{g} seed {s}" for g in GATES for s in range(seeds) if s not in have[g]]
    if missing:
        text += f"\nNot trained yet: {', '.join(missing)}.\n"
    text += "\nSink^eps (share of heads above eps) at the final checkpoint, mean over the seeds there are:\n\n"
    text += "| gate | seeds | " + " | ".join(f"Sink^{e}" for e in THRESHOLDS) + " | F-Attn |\n|---|---|" + "---|" * (len(THRESHOLDS) + 1) + "\n"
    for g, name in names.items():
        if have[g]:
            heads = [runner.head_first_token(per_run[(name, s)][steps[-1]]) for s in have[g]]
            shares = [sum(sum(h > e for h in hs) / len(hs) for hs in heads) / len(heads) for e in THRESHOLDS]
            f_attn = sum(per_run[(name, s)][steps[-1]]["f_attn"] for s in have[g]) / len(heads)
            text += f"| {g} | {len(heads)} | " + " | ".join(f"{x:.3f}" for x in shares) + f" | {f_attn:.4f} |\n"
    paired_seeds = [s for s in have["g2"] if s in have["baseline"]]
    final, secondary = [], []
    for seed in paired_seeds:
        final.append(rule_holds(runner.head_first_token(per_run[(names["g2"], seed)][steps[-1]]),
                                runner.head_first_token(per_run[(names["baseline"], seed)][steps[-1]])))
        mean3 = {g: [sum(v) / len(last3) for v in zip(*[runner.head_first_token(per_run[(names[g], seed)][s]) for s in last3])]
                 for g in ("g2", "baseline")}
        secondary.append(rule_holds(mean3["g2"], mean3["baseline"]))
    word = lambda xs: ", ".join(f"seed {s} {'holds' if x else 'fails'}" for s, x in zip(paired_seeds, xs))
    text += (f"\nRule (a G2 head > {G2_HEAD} while no head of the same seed's baseline > {BASELINE_CEILING}): "
             f"final checkpoint: {word(final)}; mean of steps {', '.join(map(str, last3))}: {word(secondary)}.\n\n")
    text += paired_f_attn(per_run, names, have, steps[-1]) + "\n"
    return text, decided(final, seeds), decided(secondary, seeds)


def decided(holds, seeds, needed=2):
    """True once >= NEEDED seeds hold, False once that can no longer happen, None while open."""
    if sum(holds) >= needed:
        return True
    return False if sum(holds) + (seeds - len(holds)) < needed else None


def verdict(per_depth):
    if all(d is True for d in per_depth):
        return "generalises"
    if any(d is False for d in per_depth):
        return "is limited to 1 layer"
    return "is undecided with the seeds trained so far"


def paired_f_attn(per_run, names, have, step):
    """Paired F-Attn differences gate - baseline at STEP over the seeds both have, Holm over the gates."""
    rows = []
    for g in ("g1", "g2"):
        both = [s for s in have[g] if s in have["baseline"]]
        if both:
            rows.append((f"{g} − baseline", stats.paired(
                [per_run[(names[g], s)][step]["f_attn"] - per_run[(names["baseline"], s)][step]["f_attn"] for s in both])))
    return stats.paired_table("F-Attn at the final checkpoint", rows)


def main():
    def options(ap):
        ap.add_argument("--depths", default="2,3")
        ap.add_argument("--gates", default=",".join(GATES), help="train only these (the summary reads every finished run)")
    a = runner.arguments(__doc__, default_seeds=3, add_options=options)
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "depth" + ("_smoke" if a.smoke else ""))
    depths = [int(d) for d in a.depths.split(",")]
    base = runner.merged(sink.RUN, sink.LONG)
    base["checkpoint"] = {"every": CHECKPOINT_EVERY, "keep": 1000}
    if a.smoke:
        depths, a.seeds = [2], 1
        runner.toy_budget(base)
        base["checkpoint"] = {"every": 2, "keep": 10}
    data = sink.bigram_backcopy_data(a, out)
    runner.use_data(base, data)
    variants = [{"name": f"{d}layer.{g}", "gate": gate, "model": {"num_hidden_layers": d}}
                for d in depths for g, gate in GATES.items()]
    trained = [v for v in variants if v["name"].split(".")[1] in a.gates.split(",")]
    analyze_args = ["--sequences", "4" if a.smoke else "64"]
    if a.smoke:
        variants = [v for v in variants if not v["name"].endswith(".g1")]
    runner.run_grid(a, base, trained, out, analyze_args)
    every = base["checkpoint"]["every"]  # an interrupted run also has a checkpoint where it stopped: left out
    per_run = {(v["name"], s): {step: an for step, an in runner.analyze_checkpoints(
                   a, os.path.join(out, "runs", f"{v['name']}-s{s}"), base, analyze_args).items() if step % every == 0}
               for v in variants for s in range(a.seeds)
               if os.path.exists(os.path.join(out, "runs", f"{v['name']}-s{s}", "result.json"))}
    if a.smoke:
        steps = sorted(per_run[(variants[0]["name"], 0)])
        return runner.write_summary(out, "depth (smoke)", f"depth: {len(steps)} checkpoints analysed\n")
    text, verdicts = "", []
    for d in depths:
        section, final, secondary = depth_section(d, per_run, a.seeds)
        text += section
        verdicts.append((final, secondary))
    text += ("## Verdict (pre-registered rule)\n\nThe G2 finding **" + verdict([f for f, _ in verdicts]) +
             f"** (final checkpoint, depths {a.depths}; a depth is decided once >= 2 of {a.seeds} seeds hold, or "
             "can no longer); secondary reading (mean of the last three checkpoints): it " +
             verdict([sec for _, sec in verdicts]) + ".\n")
    runner.write_summary(out, "depth: Bigram-Backcopy regime long at 2 and 3 layers, baseline, G1 and G2", text)


if __name__ == "__main__":
    main()
