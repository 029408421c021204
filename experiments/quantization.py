#!/usr/bin/env python3
"""Runner of RESULTS.md section 17 (pre-registered; issue 34): does the gate make a model easier to
quantize? Its plan, fixed before the first run (the section's commit), repeated here:

- Models: ref-dense (configs/ref/dense.json, scripts/reference_models.sh): baseline and G1, seeds
  0, 1 and 2, paired, each trained 550 steps at one thread on data/ref. Secondary, descriptive
  only: the quick-start models (scripts/quickstart.sh, 2 seeds; runs/quickstart).
- Formats, each applied to the final checkpoint of every model (`gattn eval --weights-dtype`):
  bf16; Q8_0 and Q4_K_M as llama.cpp's quantizer assigns them per tensor (model/quantize_model.h:
  its bytes, bit for bit; the G1 gate's rows quantized as the query rows they are fused with in a
  Qwen3.5 file: the same default type), activations quantized as llama.cpp does (Q8_0 / Q8_K
  blocks); W8A8: weights int8 per output row (absmax), every projection's input int8 with one
  absmax scale per matrix and forward pass (--batch 1: one window a pass). fp32 is the reference.
- Measure: Δ = loss(format) − loss(fp32), nats per token, over the whole validation split of
  data/ref in plain windows of 512 tokens (`gattn eval --window plain --seq 512`).
- Primary family, Holm over its 4 rows (bf16, Q8_0, Q4_K_M, W8A8), two-sided paired t, n = 3:
  Δ(G1) − Δ(baseline). Expected < 0 (the gate quantizes better). Verdicts: reproduced,
  contradicted or not significant; untested while a seed is missing (no interim verdicts).
- Descriptive, no verdict: M-Act; per layer, the kurtosis and the largest magnitude of every
  projection's input (`gattn analyze`'s projection_inputs, fp32, the first 64 validation windows
  of 512: the activations W8A8 quantizes); the quick-start models' Δ per format (Q4_K_M does not
  apply to them: rows of 192 values are not whole Q4_K blocks, where llama.cpp falls back to Q5_0).
- Stopping rule: 3 seeds per arm, every format, no exclusions; a run that fails is resumed, one
  that still fails or gives a non-finite loss is reported as such.

Each evaluation is kept in OUT/evals/<model>.<format>.json, each analysis in
OUT/analyses/<model>.json (resumable: a kept one is not rerun). --analysis-gattn: the binary of the
analyses (default --gattn; the evaluations keep theirs).

  experiments/quantization.py [--gattn build/gattn] [--analysis-gattn B] [--threads 1]
      [--out runs/experiments/quantization]
"""
import argparse
import json
import math
import os
import subprocess
import sys

import runner
import stats

FORMATS = ["f32", "bf16", "q8_0", "q4_k_m", "w8a8"]
FAMILY = ["bf16", "q8_0", "q4_k_m", "w8a8"]
GATES = ["baseline", "g1"]


def final_checkpoint(run):
    """The run's final checkpoint folder, or None while it has not finished."""
    if not os.path.exists(os.path.join(run, "summary.json")):
        return None
    steps = sorted(os.listdir(os.path.join(run, "checkpoints")))
    return os.path.join(run, "checkpoints", steps[-1]) if steps else None


def evaluate(a, name, checkpoint, data, fmt, out):
    path = os.path.join(out, "evals", f"{name}.{fmt}.json")
    if not os.path.exists(path):
        cmd = [a.gattn, "eval", "--checkpoint", checkpoint, "--data", data, "--seq", "512",
               "--window", "plain", "--batch", "1", "--threads", str(a.threads),
               "--weights-dtype", fmt, "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            result = {"failed": done.stderr.strip().splitlines()[-1] if done.stderr else "no output"}
        else:
            result = json.loads(done.stdout)
        with open(path + ".partial", "w") as f:
            json.dump(result, f)
        os.replace(path + ".partial", path)
        print(f"{name} {fmt}: {result.get('loss', result.get('failed'))}", flush=True)
    with open(path) as f:
        return json.load(f)


def analysis(a, name, checkpoint, data, out):
    """`gattn analyze` of the fp32 model on the first 64 plain windows of 512 (kept as JSON)."""
    path = os.path.join(out, "analyses", f"{name}.json")
    if not os.path.exists(path):
        cmd = [a.analysis_gattn, "analyze", "--checkpoint", checkpoint, "--data", data, "--seq",
               "512", "--no-bos", "--sequences", "64", "--threads", str(a.threads), "--out",
               path + ".partial"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            with open(path + ".partial", "w") as f:
                json.dump({"failed": done.stderr.strip().splitlines()[-1] if done.stderr else
                           "no output"}, f)
        os.replace(path + ".partial", path)
        print(f"{name} analysis", flush=True)
    with open(path) as f:
        return json.load(f)


SITES = ["mixer_input", "mixer_output_input", "mlp_input", "mlp_down_input"]


def input_table(analyses):
    """Descriptive: per model, M-Act and per projection input the largest kurtosis and |x| over
    the layers (with the layer)."""
    lines = ["Projection inputs (descriptive, no verdict): per site the largest kurtosis and the "
             "largest |x| over the layers (layer in brackets), fp32, 64 windows of 512.", "",
             "| model | M-Act | " + " | ".join(f"{s} kurtosis | {s} max" for s in SITES) + " |",
             "|---|---|" + "---|---|" * len(SITES)]
    for name, r in analyses.items():
        if "failed" in r or "layers" not in r:
            lines.append(f"| {name} | failed: {r.get('failed', 'no layers')} |")
            continue
        cells = []
        for site in SITES:
            found = [(l["layer"], p) for l in r["layers"] for p in l.get("projection_inputs", [])
                     if p["site"] == site]
            if not found:
                cells += ["n/a", "n/a"]
                continue
            k = max(found, key=lambda x: x[1]["kurtosis"])
            m = max(found, key=lambda x: x[1]["max_abs"])
            cells += [f"{k[1]['kurtosis']:.1f} [{k[0]}]", f"{m[1]['max_abs']:.2f} [{m[0]}]"]
        lines.append(f"| {name} | {r['m_act']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def deltas(evals):
    """format -> Δ against fp32 (None where either failed or is not finite)."""
    base = evals["f32"].get("loss")
    out = {}
    for fmt in FAMILY:
        loss = evals.get(fmt, {}).get("loss")
        ok = base is not None and loss is not None and math.isfinite(base) and math.isfinite(loss)
        out[fmt] = loss - base if ok else None
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gattn", default=os.path.join(runner.ROOT, "build", "gattn"))
    p.add_argument("--analysis-gattn", help="the binary of the analyses (default: --gattn)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", default=os.path.join(runner.ROOT, "runs", "experiments", "quantization"))
    a = p.parse_args()
    a.analysis_gattn = a.analysis_gattn or a.gattn
    os.makedirs(os.path.join(a.out, "evals"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "analyses"), exist_ok=True)
    ref_data = os.path.join(runner.ROOT, "data", "ref", "val.bin")
    qs_data = os.path.join(runner.ROOT, "data", "default", "val.bin")
    rows, missing, analyses = {}, [], {}
    for seed in range(a.seeds):
        for gate in GATES:
            name = f"ref-dense-{gate}-s{seed}"
            ckpt = final_checkpoint(os.path.join(runner.ROOT, "runs", "ref", f"dense-{gate}-s{seed}", "train"))
            if ckpt is None:
                missing.append(name)
                continue
            rows[name] = {fmt: evaluate(a, name, ckpt, ref_data, fmt, a.out) for fmt in FORMATS}
            analyses[name] = analysis(a, name, ckpt, ref_data, a.out)
    quick = {}
    for seed in range(2):
        for gate in GATES:
            ckpt = final_checkpoint(os.path.join(runner.ROOT, "runs", "quickstart", f"{gate}-s{seed}"))
            if ckpt is None:
                continue
            name = f"quickstart-{gate}-s{seed}"
            quick[name] = {fmt: evaluate(a, name, ckpt, qs_data, fmt, a.out)
                           for fmt in FORMATS if fmt != "q4_k_m"}
            analyses[name] = analysis(a, name, ckpt, qs_data, a.out)

    lines = ["Δ = loss(format) − loss(fp32), nats per token, whole validation split, plain windows of 512.", "",
             "| model | fp32 loss | " + " | ".join(f"Δ {f}" for f in FAMILY) + " |",
             "|---|---|" + "---|" * len(FAMILY)]
    for name, evals in {**rows, **quick}.items():
        d = deltas(evals)
        cells = ["n/a" if f not in evals else ("failed" if d[f] is None else f"{d[f]:+.5f}") for f in FAMILY]
        lines.append(f"| {name} | {evals['f32'].get('loss', float('nan')):.5f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n\n" + input_table(analyses)
    complete = [s for s in range(a.seeds) if all(f"ref-dense-{g}-s{s}" in rows for g in GATES)]
    comparisons = []
    for fmt in FAMILY:
        diffs = [deltas(rows[f"ref-dense-g1-s{s}"])[fmt] - deltas(rows[f"ref-dense-baseline-s{s}"])[fmt]
                 for s in complete]
        comparisons.append((f"Δ(G1) − Δ(baseline), {fmt}", stats.paired(diffs) if diffs else None))
    if len(complete) < a.seeds:
        text += (f"Primary family: **untested** — {len(complete)} of {a.seeds} seed pairs finished "
                 f"(waiting for: {', '.join(missing) or 'none'}); no interim verdicts.\n")
        for label, c in comparisons:
            if c is not None:
                text += f"- {label}: mean {c['mean']:+.5f} over {c['n']} pair(s) (descriptive)\n"
    else:
        text += stats.paired_table("Δ(G1) − Δ(baseline)", comparisons, digits=5)
        adjusted = stats.holm([c["p"] for _, c in comparisons])
        text += "\n| row | verdict |\n|---|---|\n"
        for (label, c), h in zip(comparisons, adjusted):
            text += f"| {label} | {stats.verdict(h, c['mean'], -1)} |\n"
    with open(os.path.join(a.out, "summary.json.partial"), "w") as f:
        json.dump({"evals": {**rows, **quick}, "complete_seeds": complete, "missing": missing}, f, indent=1)
    os.replace(os.path.join(a.out, "summary.json.partial"), os.path.join(a.out, "summary.json"))
    runner.write_summary(a.out, "Does the gate make a model easier to quantize? (section 17)", text)


if __name__ == "__main__":
    sys.exit(main())
