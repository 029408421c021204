#!/usr/bin/env python3
"""Runner 13, does the gate replace the sink, causally? (issue 30, experiment c). The plan is
RESULTS.md section 13, committed before this runner's first run; this docstring repeats it.

Sources: the 12 `long_1k` baseline and the 12 G1 final checkpoints of seeds 0-11, in the variants
runner's folders (section 9's runs: trained here from their configs where missing; none excluded).

Four arms, 500 steps each from the source's weights (`gattn train --init-from`), in the source's
regime (sink.py's long_1k: constant lr 3e-3 after its 100 warmup steps, no weight decay), fresh
optimizer state in every arm, the source's seed for the data order:
  (i)   baseline continued unchanged;
  (ii)  baseline with an identity-initialised G1 gate added ("init": "identity": zero gate
        weights, o_proj doubled: the same function at step 0), continued;
  (iii) G1 continued unchanged;
  (iv)  G1 with its gate frozen at its layer's mean score: an input-independent gate whose logit
        starts at logit(mean score) (the source analysis's `layer_mean_score`) and gets no
        gradient ("kind": "input_independent", "logit": x, "frozen": true). This changes the
        parametrisation: the gate's weights are gone, not held, and the comparison with (iii)
        includes that.
F-Attn every 50 steps (a checkpoint every 50, each analysed with --sequences 64). Primary metric:
F-Attn at step 500. Family, Holm over 2, two-sided paired t over the 12 sources: (ii) − (i) (the
gate replaces the sink: < 0) and (iv) − (iii) (without the input-dependent gate the sink returns:
> 0). Holm p < 0.05 in the predicted direction "reproduced", in the other "contradicted",
otherwise "not significant". The curves are descriptive. 12 sources per arm, no interim verdicts,
no exclusions (a failed run is resumed; one that still fails leaves its contrast "untested").

  experiments/sink_cause.py [--threads 1] [--variants-out runs/experiments/variants]
      [--out runs/experiments/sink_cause] [--smoke]
"""
import json
import math
import os

import runner
import sink
import stats
import variants

SOURCE_SEEDS = list(range(12))
STEPS, EVERY = 500, 50
ARMS = ["i_baseline", "ii_baseline_plus_g1", "iii_g1", "iv_g1_frozen"]
SOURCE = {"i_baseline": "baseline", "ii_baseline_plus_g1": "baseline", "iii_g1": "g1_sdpa",
          "iv_g1_frozen": "g1_sdpa"}
CONTRASTS = [("ii_baseline_plus_g1", "i_baseline", -1), ("iv_g1_frozen", "iii_g1", +1)]


def options(ap):
    ap.add_argument("--variants-out", default=None,
                    help="the sources' folder (default: the variants runner's, runs/experiments/variants)")


def arm_gate(arm, source_folder):
    if arm == "i_baseline":
        return {"position": "none"}
    if arm == "ii_baseline_plus_g1":
        return {"position": "sdpa", "init": "identity"}
    if arm == "iii_g1":
        return {"position": "sdpa"}
    with open(os.path.join(source_folder, "analysis.json")) as f:
        score = json.load(f)["layers"][0]["gate"]["layer_mean_score"]
    return {"position": "sdpa", "kind": "input_independent", "logit": math.log(score / (1 - score)), "frozen": True}


def continue_one(a, base, out, arm, seed, source_folder, analyze_args):
    """{step: F-Attn} of one continuation, trained and analysed if needed."""
    folder = os.path.join(out, "runs", f"{arm}-s{seed}")
    os.makedirs(folder, exist_ok=True)
    run = runner.merged(base, {"out": os.path.join(folder, "train")})
    run["model"]["gate"] = arm_gate(arm, source_folder)
    config = os.path.join(folder, "run.json")
    if not os.path.exists(os.path.join(run["out"], "summary.json")):
        with open(config, "w") as f:
            json.dump(run, f, indent=2)
        resume = ["--resume"] if os.path.isdir(os.path.join(run["out"], "checkpoints")) else \
            ["--init-from", os.path.join(source_folder, "train")]
        runner.run_cmd([a.gattn, "train", "--config", config, "--seed", str(seed)] + resume,
                       os.path.join(folder, "log.txt"), a.threads)
    return {step: an["f_attn"] for step, an in runner.analyze_checkpoints(a, folder, run, analyze_args).items()}


def main():
    a = runner.arguments(__doc__, default_seeds=len(SOURCE_SEEDS), add_options=options)
    a.variants_out = os.path.abspath(a.variants_out or os.path.join(
        runner.ROOT, "runs", "experiments", "variants" + ("_smoke" if a.smoke else "")))
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "sink_cause" + ("_smoke" if a.smoke else ""))
    source_run = runner.merged(sink.RUN, sink.REGIMES["long_1k"][1])
    seeds = SOURCE_SEEDS[:2] if a.smoke else SOURCE_SEEDS
    analyze_args = ["--sequences", "4" if a.smoke else "64"]
    if a.smoke:
        runner.toy_budget(source_run)
    runner.use_data(source_run, sink.bigram_backcopy_data(a, a.variants_out))
    grid = [{"name": n, "gate": variants.GATES[n]} for n in ("baseline", "g1_sdpa")]
    for seed in seeds:  # the sources: section 9's runs (skipped where they are already there)
        for v in grid:
            runner.train_and_analyze(a, source_run, v, seed, a.variants_out, analyze_args)
    steps, every = (4, 2) if a.smoke else (STEPS, EVERY)
    base = runner.merged(source_run, {"steps": steps, "eval": {"every": steps},
                                      "checkpoint": {"every": every, "keep": steps // every}})
    curves = {}
    for seed in seeds:
        for arm in ARMS:
            print(f"== {arm} seed {seed}", flush=True)
            source = os.path.join(a.variants_out, "runs", f"{SOURCE[arm]}-s{seed}")
            curves[(arm, seed)] = continue_one(a, base, out, arm, seed, source, analyze_args)

    text = f"Continuations of {steps} steps from the long_1k runs of seeds {seeds[0]}-{seeds[-1]}.\n\n"
    text += "F-Attn at the last step, per source seed:\n\n| seed | " + " | ".join(ARMS) + " |\n|---|" + \
        "---|" * len(ARMS) + "\n"
    for s in seeds:
        text += f"| {s} | " + " | ".join(f"{curves[(arm, s)][steps]:.4f}" for arm in ARMS) + " |\n"
    text += "\nF-Attn every " + str(every) + " steps, mean over seeds (descriptive):\n\n| step | " + \
        " | ".join(ARMS) + " |\n|---|" + "---|" * len(ARMS) + "\n"
    for step in range(every, steps + 1, every):
        text += f"| {step} | " + " | ".join(
            f"{sum(curves[(arm, s)][step] for s in seeds) / len(seeds):.4f}" for arm in ARMS) + " |\n"
    tests = [(f"{c} − {r}", stats.paired([curves[(c, s)][steps] - curves[(r, s)][steps] for s in seeds]))
             for c, r, _ in CONTRASTS]
    text += "\n" + stats.paired_table("F-Attn at the last step, the planned family", tests)
    adjusted = stats.holm([t["p"] for _, t in tests])
    for (name, t), h, (_, _, sign) in zip(tests, adjusted, CONTRASTS):
        text += f"- {name}: **{stats.verdict(h, t['mean'], sign)}**\n"
    runner.write_summary(out, "sink_cause: does the gate replace the sink, causally? (RESULTS.md section 13)", text)


if __name__ == "__main__":
    main()
