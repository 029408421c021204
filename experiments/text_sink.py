#!/usr/bin/env python3
"""Runner 10, a sink on natural text: the four probes of RESULTS.md section 10, chosen and written
there before any of them ran. Baseline models (no gate) on the default corpus in BOS windows, each
trained for at most 45 minutes of one core: the budget is turned into steps once, by timing a few
steps of each probe on one thread, and kept in calibration.json, so that a rerun or a resume trains
the same steps. Every checkpoint is analysed (the sink can come and go). A probe grows a sink when,
at its final checkpoint, some head puts more than 0.3 on the first token and F-Attn exceeds 3x its
uniform value. Where the largest activation sits (first token or not) is reported beside it.

--mact runs section 10's follow-up instead: probe 1 (qk_off) for a quarter of its calibrated steps,
baseline and G1 x 3 seeds, M-Act of G1 against the baseline paired by seed (summary in OUT/mact).

  experiments/text_sink.py [--minutes 45] [--probes qk_off,...] [--jobs 2 --threads 1] [--out runs/experiments/text_sink]
  experiments/text_sink.py --mact [--jobs 2 --threads 1]
"""
import json
import os
import statistics

import runner
import stats

BASE_MODEL = {"gate": {"position": "none"}, "use_qk_norm": False}
PROBES = {  # name: (what section 10 says, model fields, run fields)
    "qk_off": ("the quick-start model with QK-norm off", {}, {}),
    "qk_off_1024": ("the same with windows of 1,024 tokens (batch 4: the same tokens per step)", {},
                    {"data": {"seq_len": 1024}, "batch_size": 4}),
    "small_2layer": ("2 layers, hidden 128, 2 heads of 64 (one KV head), QK-norm off",
                     {"num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2}, {}),
    "qk_off_lr1e-2": ("QK-norm off, constant lr 1e-2 after warm-up (min_lr = lr), no weight decay", {},
                      {"optimizer": {"lr": 0.01, "min_lr": 0.01, "weight_decay": 0.0}}),
}
SINK_HEAD, SINK_RATIO = 0.3, 3.0  # the section's criterion
MACT_PROBE, MACT_SEEDS, MACT_ALPHA = "qk_off", 3, 0.05  # the follow-up's plan
G1 = {"position": "sdpa", "granularity": "elementwise"}
CALIBRATION_STEPS = 12


def probe_run(base, name):
    _, model, run = PROBES[name]
    out = runner.merged(base, run)
    out["model"] = runner.merged(out["model"], runner.merged(BASE_MODEL, model))
    return out


def calibrate(a, base, out, steps_timed=CALIBRATION_STEPS):
    """{probe: steps} filling --minutes of one core at the median step rate of STEPS_TIMED steps
    (the first two left out), timed once and kept in calibration.json."""
    path = os.path.join(out, "calibration.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    steps = {}
    for name in PROBES:
        folder = os.path.join(out, "calibration", name)
        os.makedirs(folder, exist_ok=True)
        run = probe_run(base, name)
        run.update(steps=steps_timed, out=os.path.join(folder, "train"))
        run["schedule"] = runner.merged(run["schedule"], {"warmup_steps": 2})
        run["eval"] = {"every": steps_timed, "windows": 1}
        run["checkpoint"] = {"every": steps_timed, "keep": 1}
        config = os.path.join(folder, "run.json")
        with open(config, "w") as f:
            json.dump(run, f, indent=2)
        runner.run_cmd([a.gattn, "train", "--config", config], os.path.join(folder, "log.txt"), 1)
        timed = runner.read_metrics(os.path.join(run["out"], "metrics.jsonl"))[2:]  # past the start-up
        rate = statistics.median(m["tokens_per_s"] for m in timed)
        tokens = run["batch_size"] * run["data"]["seq_len"]
        steps[name] = max(1, int(a.minutes * 60 * rate / tokens))
    with open(path + ".partial", "w") as f:
        json.dump(steps, f, indent=2)
    os.replace(path + ".partial", path)
    return steps


def variants_for(base, steps):
    """The probes as the runner's variants, each with its calibrated steps and 4 checkpoints."""
    out = []
    for name in PROBES:
        run = probe_run(base, name)
        n = steps[name]
        every = max(1, n // 4)
        over = {"steps": n, "eval": {"every": n, "windows": 128}, "checkpoint": {"every": every, "keep": 8},
                "data": run["data"], "batch_size": run["batch_size"], "optimizer": run["optimizer"]}
        out.append({"name": name, "model": run["model"], "run": over})
    return out


def probe_section(name, analyses, steps, val_loss):
    """Markdown for one probe: per checkpoint the strongest first-token head, F-Attn against its
    uniform value, M-Act and whether it sits at the first token; and the criterion's reading."""
    what = PROBES[name][0]
    lines = [f"## {name}: {what} ({steps} steps, val loss {val_loss:.4f})", "",
             "| step | strongest first-token head | F-Attn | uniform F-Attn | F-Attn / uniform | M-Act | M-Act at first token? |",
             "|---|---|---|---|---|---|---|"]
    for step in sorted(analyses):
        an = analyses[step]
        m, first = runner.where_max(an)
        f, u = an["f_attn"], an["uniform"]["f_attn"]
        lines.append(f"| {step} | {max(runner.head_first_token(an)):.3f} | {f:.4f} | {u:.4f} | {f / u:.2f} | {m:,.1f} | "
                     f"{'yes' if first else 'no'} |")
    final = analyses[max(analyses)]
    grows = (max(runner.head_first_token(final)) > SINK_HEAD and final["f_attn"] > SINK_RATIO * final["uniform"]["f_attn"])
    lines += ["", f"Grows a sink (final checkpoint: a head > {SINK_HEAD} and F-Attn > {SINK_RATIO:g}x uniform): "
              f"**{'yes' if grows else 'no'}**", ""]
    return "\n".join(lines) + "\n", grows


def mact_verdict(p):
    """Section 10's follow-up rule on the paired G1 - baseline M-Act (stats.paired's dict)."""
    if p["n"] < 2 or p["p"] is None or p["p"] >= MACT_ALPHA:
        return "not significant"
    return "reproduced (G1 lowers M-Act)" if p["mean"] < 0 else "contradicted (G1 raises M-Act)"


def per_seed(rows, seeds):
    """Markdown: each seed's M-Act and val loss, baseline and G1, and the M-Act difference."""
    lines = ["| seed | M-Act baseline | M-Act G1 | Δ M-Act | val loss baseline | val loss G1 |", "|---|---|---|---|---|---|"]
    for s in range(seeds):
        b, g = rows[("mact_baseline", s)], rows[("mact_g1", s)]
        lines.append(f"| {s} | {b['m_act']:.2f} | {g['m_act']:.2f} | {g['m_act'] - b['m_act']:+.2f} | "
                     f"{b['val_loss']:.4f} | {g['val_loss']:.4f} |")
    return "\n".join(lines) + "\n"


def mact_follow_up(a, base, steps, out):
    """Probe 1's run for a quarter of its steps (its own schedule), baseline and G1 paired by seed."""
    run = probe_run(base, MACT_PROBE)
    n = max(1, steps[MACT_PROBE] // 4)
    over = {"steps": n, "eval": {"every": n, "windows": run["eval"]["windows"]}, "checkpoint": {"every": n, "keep": 1},
            "data": run["data"], "batch_size": run["batch_size"], "optimizer": run["optimizer"]}
    grid = [{"name": "mact_baseline", "model": run["model"], "run": over},
            {"name": "mact_g1", "model": run["model"], "gate": G1, "run": over}]
    analyze_args = ["--sequences", "4" if a.smoke else "64"]
    rows = runner.run_grid(a, base, grid, out, analyze_args)
    d = runner.differences(rows, "mact_g1", "mact_baseline", a.seeds, "m_act")
    p = stats.paired(d)
    text = (f"{MACT_PROBE} ({PROBES[MACT_PROBE][0]}) for {n} steps, seeds 0–{a.seeds - 1}.\n\n" +
            runner.summary_table(rows, grid, a.seeds, "mact_baseline") + "\n" +
            stats.paired_table("M-Act", [("mact_g1 − mact_baseline", p)], 2) + "\n" + per_seed(rows, a.seeds) + "\n" +
            "Where the largest activation sits, per layer:\n\n" + runner.max_activation_table(out, grid, a.seeds) + "\n" +
            f"Verdict (section 10's rule, two-sided p < {MACT_ALPHA} over {p['n']} seeds): **{mact_verdict(p)}**\n")
    summary = os.path.join(out, "mact")
    os.makedirs(summary, exist_ok=True)
    runner.write_summary(summary, "text sink follow-up: G1 and massive activations on text (RESULTS.md section 10)", text)


def main():
    def options(ap):
        ap.add_argument("--minutes", type=float, default=45.0)
        ap.add_argument("--probes", default=",".join(PROBES), help="the probes to train and summarise")
        ap.add_argument("--mact", action="store_true", help="the M-Act follow-up (G1 against the baseline) instead")
    a = runner.arguments(__doc__, default_seeds=1, add_options=options)
    unknown = [p for p in a.probes.split(",") if p not in PROBES]
    if unknown:
        raise SystemExit(f"unknown probe: {', '.join(unknown)} (known: {', '.join(PROBES)})")
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "text_sink" + ("_smoke" if a.smoke else ""))
    os.makedirs(out, exist_ok=True)
    base = runner.quickstart_run()
    if a.data:
        runner.use_data(base, a.data)
    if a.smoke:
        a.minutes, a.seeds = 0.02, 1
        base["schedule"]["warmup_steps"] = 1
        base["model"].update(hidden_size=64, intermediate_size=128, num_hidden_layers=1)
    steps = calibrate(a, base, out, 4 if a.smoke else CALIBRATION_STEPS)
    if a.mact:
        a.seeds = 2 if a.smoke else MACT_SEEDS
        return mact_follow_up(a, base, steps, out)
    grid = [v for v in variants_for(base, steps) if v["name"] in a.probes.split(",")]
    if a.smoke:
        for v in grid:
            v["run"]["eval"]["windows"] = 4
    analyze_args = ["--sequences", "4" if a.smoke else "64"]
    rows = runner.run_grid(a, base, grid, out, analyze_args)
    text, grown = "", []
    for v in grid:
        folder = os.path.join(out, "runs", f"{v['name']}-s0")
        run = probe_run(base, v["name"])
        section, grows = probe_section(v["name"], runner.analyze_checkpoints(a, folder, run, analyze_args),
                                       steps[v["name"]], rows[(v["name"], 0)]["val_loss"])
        text += section
        grown += [v["name"]] if grows else []
    text += ("Probes that grew a sink: " + (", ".join(grown) if grown else "none") + ".\n")
    left = [p for p in PROBES if p not in a.probes.split(",")]
    if left:
        text += f"Not in this summary (not run yet): {', '.join(left)}.\n"
    runner.write_summary(out, f"text sink: {len(grid)} probes of at most {a.minutes:g} minutes on one core", text)


if __name__ == "__main__":
    main()
