#!/usr/bin/env python3
"""Runner 8, the G2 mechanism, measured: why does a G2 (value) gate make the sink stronger on
Bigram-Backcopy while G1 removes it? Trains (or reuses) the variants runner's baseline, G1 and G2
runs of regime long_1k (1 layer; the same folders, so `variants.py` and this runner share them),
and, where depth.py has run, also reads its 2- and 3-layer runs. For every final checkpoint:
  - gate scores, |V| after the gate, split by position (the first token against the rest);
  - interventions, each against the unmodified model on the same windows: the first token's
    value zeroed (value@first=zero, every model) and the first token's gate forced open
    (gate@first=open, G2: its value passes ungated), reporting Δ loss and Δ F-Attn.
Decision rules: experiments/RESULTS.md section 8 (written before the runs). Resumable.

  experiments/mechanism.py [--seeds 3] [--jobs 2 --threads 1] [--depth-out runs/experiments/depth]
"""
import json
import os
import shutil
import subprocess

import runner
import sink
import stats
import variants

GATES = {"baseline": "baseline", "g1": "g1_sdpa", "g2": "g2_value"}  # ours: the variants runner's names
INTERVENTIONS = {"value@first=zero": ("baseline", "g1", "g2"), "gate@first=open": ("g2",)}


def analysis(a, checkpoint, val, seq, path, extra=()):
    """gattn analyze of CHECKPOINT (with EXTRA options), kept in PATH."""
    return runner.analyze_once(a, checkpoint, val, seq, path, ["--sequences", "4" if a.smoke else "64"] + list(extra))


def measure(a, folder, gate, val, seq):
    """The position split and the interventions of one finished run's final checkpoint."""
    checkpoint = os.path.join(folder, "train")
    plain = analysis(a, checkpoint, val, seq, os.path.join(folder, "mechanism_plain.json"))
    out = {"plain": plain, "interventions": {}}
    for spec, gates in INTERVENTIONS.items():
        if gate in gates:
            name = spec.replace("@", "_at_").replace("=", "_")
            changed = analysis(a, checkpoint, val, seq, os.path.join(folder, f"mechanism_{name}.json"),
                               ["--intervene", spec])
            out["interventions"][spec] = {"d_loss": changed["loss"] - changed["unmodified_loss"],
                                          "d_f_attn": changed["f_attn"] - plain["f_attn"]}
    return out


def split(plain, field):
    """(first, rest): the mean over layers and heads of a per-position quantity of the analysis
    (value_mean_abs, or a gate's mean_score / mean_abs_after); None where the model has none."""
    groups = {"first": [], "rest": []}
    for layer in plain["layers"]:
        holder = layer if field == "value_mean_abs" else layer.get("gate", {}).get("by_position", {})
        for g in groups:
            groups[g] += holder.get(field, {}).get(g, [])
    return tuple(sum(xs) / len(xs) if xs else None for xs in groups.values())


def section(title, measured, seeds):
    """Markdown of one depth: per seed the position split, then the interventions' paired stats."""
    text = f"## {title}\n\n| gate | seed | F-Attn | gate score first / rest | \\|V\\| first / rest (after any value gate) |\n"
    text += "|---|---|---|---|---|\n"
    for g in GATES:
        for s in range(seeds):
            m = measured.get((g, s))
            if m is None:
                continue
            score, value = split(m["plain"], "mean_score"), split(m["plain"], "value_mean_abs")
            cell = "–" if score[0] is None else f"{score[0]:.3f} / {score[1]:.3f}"
            text += f"| {g} | {s} | {m['plain']['f_attn']:.4f} | {cell} | {value[0]:.3f} / {value[1]:.3f} |\n"
    text += "\nPer seed, each intervention's Δ val loss and Δ F-Attn:\n\n| gate, intervention | seed | Δ val loss | Δ F-Attn |\n|---|---|---|---|\n"
    for spec, gates in INTERVENTIONS.items():
        for g in gates:
            for s in range(seeds):
                if (g, s) in measured:
                    d = measured[(g, s)]["interventions"][spec]
                    text += f"| {g}, {spec} | {s} | {d['d_loss']:+.5f} | {d['d_f_attn']:+.5f} |\n"
    for key, label in (("d_loss", "Δ val loss"), ("d_f_attn", "Δ F-Attn")):
        rows = []
        for spec, gates in INTERVENTIONS.items():
            for g in gates:
                d = [measured[(g, s)]["interventions"][spec][key] for s in range(seeds) if (g, s) in measured]
                if d:
                    rows.append((f"{g}, {spec}", stats.paired(d)))
        text += "\n" + stats.paired_table(f"{label} of each intervention against the unmodified model", rows) if rows else ""
    return text + "\n"


def side_by_side(a, folders, name, reports):
    """gattn compare --html of the baseline against G1 and against G2 (runs of every seed), and a
    PNG of each page by headless Chromium when it is installed (for RESULTS.md). Runs restored
    from experiments/rows have no checkpoints to compare: then nothing is drawn, and it says so."""
    missing = [p for paths in folders.values() for p in paths if not os.path.isdir(os.path.join(p, "checkpoints"))]
    if missing:
        print(f"{name}: side-by-side reports not drawn, {len(missing)} runs have no checkpoints (restored rows)")
        return
    os.makedirs(os.path.join(reports, "runs"), exist_ok=True)
    named = {}  # links named after the run, so that the report names the models
    for g, paths in folders.items():
        named[g] = []
        for path in paths:
            link = os.path.join(reports, "runs", f"{name}.{g}-s{len(named[g])}")
            if not os.path.islink(link):
                os.symlink(path, link)
            named[g].append(link)
    folders = named
    for g in ("g1", "g2"):
        html = os.path.join(reports, f"{name}_baseline_vs_{g}.html")
        if not folders[g] or os.path.exists(html):
            continue
        runner.run_cmd([a.gattn, "compare", "--windows", "256", "--baseline"] + folders["baseline"] +
                       ["--candidate"] + folders[g] + ["--html", html], os.path.join(reports, "log.txt"), a.threads)
        png = html[:-5] + ".png"
        if shutil.which("chromium"):
            subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            f"--screenshot={png}", "--window-size=1100,1900", "file://" + html],
                           env=dict(os.environ, HOME=reports), capture_output=True)


def main():
    a = runner.arguments(__doc__, default_seeds=3, add_options=lambda ap: ap.add_argument(
        "--depth-out", default=os.path.join(runner.ROOT, "runs", "experiments", "depth")))
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "variants" + ("_smoke" if a.smoke else ""))
    base = runner.merged(sink.RUN, sink.REGIMES["long_1k"][1])
    if a.smoke:
        a.seeds = 1
        runner.toy_budget(base)
    data = sink.bigram_backcopy_data(a, out)
    runner.use_data(base, data)
    grid = [{"name": GATES[g], "gate": variants.GATES[GATES[g]]} for g in GATES]
    runner.run_grid(a, base, grid, out, ["--sequences", "4" if a.smoke else "64"])
    val, seq = base["data"]["val"], base["data"]["seq_len"]
    one_layer = {(g, s): measure(a, os.path.join(out, "runs", f"{GATES[g]}-s{s}"), g, val, seq)
                 for g in GATES for s in range(a.seeds)}
    text = section("1 layer (regime long_1k, the variants runner's runs)", one_layer, a.seeds)
    reports = os.path.join(out, "mechanism", "reports")
    if not a.smoke:
        side_by_side(a, {g: [os.path.join(out, "runs", f"{GATES[g]}-s{s}", "train") for s in range(a.seeds)]
                         for g in GATES}, "1layer_long_1k", reports)
    for depth in (2, 3):
        measured = {}
        for g in GATES:
            for s in range(a.seeds):
                folder = os.path.join(a.depth_out, "runs", f"{depth}layer.{g}-s{s}")
                if os.path.exists(os.path.join(folder, "result.json")):
                    with open(os.path.join(folder, "run.json")) as f:
                        data = json.load(f)["data"]
                    measured[(g, s)] = measure(a, folder, g, data["val"], data["seq_len"])
        if measured:
            text += section(f"{depth} layers (regime long, depth.py's runs)", measured, a.seeds)
        if len(measured) == len(GATES) * a.seeds and not a.smoke:
            side_by_side(a, {g: [os.path.join(a.depth_out, "runs", f"{depth}layer.{g}-s{s}", "train")
                                 for s in range(a.seeds)] for g in GATES}, f"{depth}layer_long", reports)
    summary = os.path.join(out, "mechanism")
    os.makedirs(summary, exist_ok=True)
    runner.write_summary(summary, "G2 mechanism: position split and first-token interventions", text)


if __name__ == "__main__":
    main()
