"""What every experiment runner shares: train a (variant, seed) grid with `gattn train`, resumable
(a finished run is skipped, an interrupted one resumes from its newest checkpoint), analyse each
finished run with `gattn analyze`, append one JSON line per finished run to the runner's results
file, and summarise each variant against its baseline as paired differences over seeds.

A variant is a dict: name, and optional gate (a gate object), model (fields replacing the base
model config's), run (fields replacing the base run config's, e.g. {"optimizer": {"lr": 0.003}}).
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import threading

import stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_LOCK = threading.Lock()  # --jobs > 1: one appender of results.jsonl at a time
METRICS = [  # (key, label, format)
    ("val_loss", "val loss", "{:.4f}"),
    ("val_perplexity", "val PPL", "{:.2f}"),
    ("f_attn", "F-Attn", "{:.4f}"),
    ("sink_fraction", "Sink^0.3", "{:.3f}"),
    ("m_act", "M-Act", "{:.2f}"),
    ("gate_score", "gate score", "{:.4f}"),
    ("parameters", "parameters", "{:,.0f}"),
    ("tokens_per_s", "tokens/s", "{:,.0f}"),
]


def arguments(description, default_seeds, add_options=None):
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    if add_options:
        add_options(ap)
    ap.add_argument("--gattn", default=os.path.join(ROOT, "build", "gattn"))
    ap.add_argument("--out", default=None, help="folder of the runs and results")
    ap.add_argument("--seeds", type=int, default=default_seeds)
    ap.add_argument("--threads", type=int, default=0, help="threads per run (0: all cores)")
    ap.add_argument("--jobs", type=int, default=1, help="runs trained at once (e.g. --jobs 2 --threads 1)")
    ap.add_argument("--smoke", action="store_true", help="2 variants, 1 seed, a few steps")
    ap.add_argument("--data", default=None,
                    help="folder with train.bin and val.bin (and tokenizer.json) replacing the runner's data")
    a = ap.parse_args()
    # Run configs live in the run folders and resolve relative paths from there: make ours absolute.
    for name in ("gattn", "out", "data"):
        value = getattr(a, name)
        if value and (name != "gattn" or os.sep in value):  # a bare --gattn is looked up in PATH
            setattr(a, name, os.path.abspath(value))
    return a


def use_data(run, folder):
    """Points a run config at FOLDER's shards, with the model's vocabulary sized to them."""
    run["data"]["train"] = os.path.join(folder, "train.bin")
    run["data"]["val"] = os.path.join(folder, "val.bin")
    tokenizer = os.path.join(folder, "tokenizer.json")
    if os.path.exists(tokenizer):
        run["data"]["tokenizer"] = tokenizer
    else:
        run["data"].pop("tokenizer", None)
    with open(run["data"]["train"], "rb") as f:
        run["model"]["vocab_size"] = struct.unpack_from("<I", f.read(64), 32)[0]


def merged(base, override):
    out = copy.deepcopy(base)
    for k, v in (override or {}).items():
        out[k] = merged(out.get(k, {}), v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def quickstart_run():
    """The quick start's run config (configs/quickstart/run.json) with its model inlined and
    absolute data paths: the default corpus, the default model."""
    folder = os.path.join(ROOT, "configs", "quickstart")
    with open(os.path.join(folder, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(folder, run["model"])) as f:
        run["model"] = json.load(f)
    for k in ("train", "val", "tokenizer"):
        run["data"][k] = os.path.normpath(os.path.join(folder, run["data"][k]))
    return run


def toy_budget(run):
    """--smoke: a few steps of 2 windows, to check the plumbing."""
    run.update(steps=4, batch_size=2)
    run["schedule"]["warmup_steps"] = 1
    run["eval"] = {"every": 4, "windows": 4}
    run["checkpoint"] = {"every": 2, "keep": 1}


def run_cmd(cmd, log, threads):
    """Runs CMD (OMP_NUM_THREADS=THREADS when > 0), its output appended to LOG, or, without a
    LOG, returned; exits naming the command (and LOG, or the command's errors) when it fails."""
    env = dict(os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads > 0 else {}))
    if log is None:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
        return done.stdout
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}; see {log}")
    return None


def output_once(path, cmd, threads):
    """CMD's standard output, kept in PATH: run only while PATH is missing, written whole."""
    if not os.path.exists(path):
        text = run_cmd(cmd, None, threads)
        with open(path + ".partial", "w") as f:
            f.write(text)
        os.replace(path + ".partial", path)
    with open(path) as f:
        return f.read()


def analyze_once(a, checkpoint, data, seq_len, path, extra=(), log=None):
    """`gattn analyze` of CHECKPOINT on the shard DATA into PATH (JSON), run only while PATH is
    missing (the command writes PATH.partial, renamed once it succeeds); returns the analysis."""
    if not os.path.exists(path):
        run_cmd([a.gattn, "analyze", "--checkpoint", checkpoint, "--data", data, "--seq", str(seq_len),
                 "--out", path + ".partial"] + list(extra), log, a.threads)
        os.replace(path + ".partial", path)
    with open(path) as f:
        return json.load(f)


def analyze_checkpoints(a, folder, run, analyze_args):
    """{step: analysis} of every checkpoint of a finished run (each analysed once, then read).
    A run restored from experiments/rows (restore_rows.py) has its analyses but no checkpoints:
    the saved analysis_stepN.json files are read instead."""
    out = {}
    for checkpoint in sorted(glob.glob(os.path.join(folder, "train", "checkpoints", "step_*"))):
        step = int(os.path.basename(checkpoint)[5:])
        out[step] = analyze_once(a, checkpoint, run["data"]["val"], run["data"]["seq_len"],
                                 os.path.join(folder, f"analysis_step{step}.json"), analyze_args,
                                 os.path.join(folder, "log.txt"))
    for path in glob.glob(os.path.join(folder, "analysis_step*.json")):
        step = int(os.path.basename(path)[len("analysis_step"):-len(".json")])
        if step not in out:
            with open(path) as f:
                out[step] = json.load(f)
    return dict(sorted(out.items()))


def head_first_token(analysis):
    """Every head's first-token attention (the first query excluded, as in F-Attn), layer-major."""
    return [x for layer in analysis["layers"] for x in layer["first_token_attention"]]


def where_max(analysis):
    """The largest |hidden| over layers and whether it sits at the first token (position 0)."""
    top = max(analysis["layers"], key=lambda layer: layer["max_abs_hidden"])
    return top["max_abs_hidden"], top["max_at"]["position"] == 0


def train_and_analyze(a, base_run, variant, seed, out, analyze_args):
    """Returns the result row of one (variant, seed), training and analysing it if needed."""
    folder = os.path.join(out, "runs", f"{variant['name']}-s{seed}")
    row_file = os.path.join(folder, "result.json")
    if os.path.exists(row_file):
        with open(row_file) as f:
            return json.load(f)
    os.makedirs(folder, exist_ok=True)
    run = merged(base_run, variant.get("run"))
    run["model"] = merged(run["model"], variant.get("model"))
    if "gate" in variant:
        run["model"]["gate"] = variant["gate"]
    run["out"] = os.path.join(folder, "train")
    config = os.path.join(folder, "run.json")
    with open(config, "w") as f:
        json.dump(run, f, indent=2)
    log = os.path.join(folder, "log.txt")
    resume = ["--resume"] if os.path.isdir(os.path.join(run["out"], "checkpoints")) else []
    run_cmd([a.gattn, "train", "--config", config, "--seed", str(seed)] + resume, log, a.threads)
    an = analyze_once(a, run["out"], run["data"]["val"], run["data"]["seq_len"], os.path.join(folder, "analysis.json"),
                      analyze_args, log)
    with open(os.path.join(run["out"], "summary.json")) as f:
        summary = json.load(f)
    row = {"variant": variant["name"], "seed": seed, "command": f"gattn train --config {config} --seed {seed}"}
    for key, _, _ in METRICS:
        row[key] = summary.get(key, an.get(key))
    row.update(training_curve_stats(os.path.join(run["out"], "metrics.jsonl"), run["schedule"]["warmup_steps"]))
    row["uniform_f_attn"] = an["uniform"]["f_attn"]
    with open(row_file, "w") as f:
        json.dump(row, f, indent=2)
    with RESULTS_LOCK, open(os.path.join(out, "results.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    return row


def read_metrics(path):
    """The trainer's metrics.jsonl: one dict per step (a torn last line is skipped)."""
    steps = []
    with open(path) as f:
        for line in f:
            try:
                steps.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return steps


def training_curve_stats(metrics_path, warmup):
    """Loss spikes (a step after warm-up whose loss exceeds 1.5x the mean of the previous 20
    steps), skipped (non-finite) steps, the largest and the last M-Act seen during training."""
    steps = read_metrics(metrics_path)
    losses = [s.get("loss") for s in steps]
    spikes = 0
    for i in range(max(warmup, 20), len(losses)):
        window = [x for x in losses[i - 20:i] if x is not None and math.isfinite(x)]
        x = losses[i]
        if x is None or not math.isfinite(x) or (window and x > 1.5 * statistics.mean(window)):
            spikes += 1
    acts = [s["max_abs_hidden"] for s in steps if isinstance(s.get("max_abs_hidden"), (int, float))]
    return {"loss_spikes": spikes, "skipped_steps": sum(1 for s in steps if s.get("skipped")),
            "max_m_act_training": max(acts) if acts else None,
            "final_train_loss": losses[-1] if losses else None}


def run_grid(a, base_run, variants, out, analyze_args=(), seeds=None):
    """Trains every (variant, seed), --jobs at a time, seeds outermost so that partial results
    are paired. SEEDS: a list (default 0 .. --seeds - 1)."""
    def one(v, seed):
        print(f"== {v['name']} seed {seed}", flush=True)
        return train_and_analyze(a, base_run, v, seed, out, list(analyze_args))

    grid = [(v, seed) for seed in (range(a.seeds) if seeds is None else seeds) for v in variants]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs))
    try:
        futures = {(v["name"], seed): pool.submit(one, v, seed) for v, seed in grid}
        return {key: future.result() for key, future in futures.items()}
    finally:
        pool.shutdown(cancel_futures=True)  # after a failed run, start no more


def long_run_grid(a, name, arms, seeds, steps):
    """Sections 15 and 16: every arm trained STEPS steps per seed on the quick start's run (or
    --data), evaluated once at the end on the whole validation split and analysed on 64 sequences
    (--smoke: the toy budget, the first two seeds, 4 sequences). The arms' models take the data's
    vocabulary. Returns (out, base run, seeds, rows)."""
    out = a.out or os.path.join(ROOT, "runs", "experiments", name + ("_smoke" if a.smoke else ""))
    base = quickstart_run()
    base["steps"] = steps
    base["eval"] = {"every": steps, "windows": 0}  # 0: the whole validation split
    base["checkpoint"] = {"every": 200, "keep": 1}
    if a.data:
        use_data(base, a.data)
    if a.smoke:
        toy_budget(base)
        seeds = seeds[:2]
    analyze_args = ["--sequences", "4" if a.smoke else "64"]
    arms = [dict(arm, model=dict(arm["model"], vocab_size=base["model"]["vocab_size"])) for arm in arms]
    return out, base, seeds, run_grid(a, base, arms, out, analyze_args, seeds=seeds)


def fmt(f, x):
    return "–" if x is None else f.format(x)


PAIRED = [("val_loss", "val loss", 4), ("f_attn", "F-Attn", 4)]  # (key, label, digits)


def contrast(rows, seeds, name, baseline, key):
    """The paired test of name - baseline of KEY over the list SEEDS (every row present)."""
    return stats.paired([rows[(name, s)][key] - rows[(baseline, s)][key] for s in seeds])


def differences(rows, name, baseline, seeds, key):
    """Per-seed differences name - baseline of KEY (seeds where either is missing left out)."""
    return [rows[(name, s)][key] - rows[(baseline, s)][key] for s in range(seeds)
            if rows[(name, s)][key] is not None and rows[(baseline, s)][key] is not None]


def paired_against(rows, variants, seeds, baseline, key):
    """[(label, stats.paired)] of every variant but the baseline against it (those with data)."""
    out = []
    for v in variants:
        d = differences(rows, v["name"], baseline, seeds, key)
        if v["name"] != baseline and d:
            out.append((f"{v['name']} − {baseline}", stats.paired(d)))
    return out


def summary_table(rows, variants, seeds, baseline):
    """Markdown: per variant the mean ± sd over seeds of each metric, then for the val loss and
    F-Attn the paired differences of every variant against the baseline (n, mean, sd, t,
    two-sided p, Holm-adjusted p over the variants, 95% interval)."""
    head = ["variant"] + [label for _, label, _ in METRICS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in variants:
        cells = [v["name"]]
        for key, _, f in METRICS:
            xs = [rows[(v["name"], s)][key] for s in range(seeds) if rows[(v["name"], s)][key] is not None]
            if not xs:
                cells.append("–")
            elif len(xs) == 1:
                cells.append(fmt(f, xs[0]))
            else:
                cells.append(fmt(f, statistics.mean(xs)) + " ± " + fmt(f, statistics.stdev(xs)))
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    for key, label, digits in PAIRED:
        comparisons = paired_against(rows, variants, seeds, baseline, key)
        if comparisons:
            text += "\n" + stats.paired_table(label, comparisons, digits)
    return text


def per_seed_table(rows, variants, seeds, key, f):
    """Markdown: KEY of every (variant, seed), one row per variant (– where a run is missing)."""
    lines = ["| variant | " + " | ".join(f"seed {s}" for s in range(seeds)) + " |", "|---|" + "---|" * seeds]
    for v in variants:
        cells = [fmt(f, rows[(v["name"], s)][key]) if (v["name"], s) in rows else "–" for s in range(seeds)]
        lines.append(f"| {v['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def training_loss_table(out, variants, seeds, steps):
    """Markdown: the training loss at each of STEPS of every run (its metrics.jsonl)."""
    lines = ["| run | " + " | ".join(f"step {n}" for n in steps) + " |", "|---|" + "---|" * len(steps)]
    for v in variants:
        for s in range(seeds):
            path = os.path.join(out, "runs", f"{v['name']}-s{s}", "train", "metrics.jsonl")
            if not os.path.exists(path):
                continue
            loss = {m["step"]: m["loss"] for m in read_metrics(path) if "loss" in m}
            lines.append(f"| {v['name']} s{s} | " + " | ".join(fmt("{:.4f}", loss.get(n)) for n in steps) + " |")
    return "\n".join(lines) + "\n"


def run_analyses(out, variants, seeds):
    """(variant, seed, analysis) of every run of VARIANTS x SEEDS in OUT with an analysis.json."""
    for v in variants:
        for s in range(seeds):
            path = os.path.join(out, "runs", f"{v['name']}-s{s}", "analysis.json")
            if os.path.exists(path):
                with open(path) as f:
                    yield v, s, json.load(f)


def max_activation_table(out, variants, seeds):
    """Markdown: per run, each layer's largest |hidden| with its (position, channel), read from the
    run's analysis.json: whether massive activations sit at the first token (position 0)."""
    lines = ["| run | per layer: max \\|h\\| (position, channel) | layers with the max at position 0 |", "|---|---|---|"]
    for v, s, analysis in run_analyses(out, variants, seeds):
        layers = analysis["layers"]
        cells = ", ".join(f"{l['max_abs_hidden']:,.0f} ({l['max_at']['position']}, {l['max_at']['channel']})" for l in layers)
        first = sum(l["max_at"]["position"] == 0 for l in layers)
        lines.append(f"| {v['name']} s{s} | {cells} | {first} of {len(layers)} |")
    return "\n".join(lines) + "\n"


def write_summary(out, title, text):
    path = os.path.join(out, "summary.md")
    with open(path, "w") as f:
        f.write(f"# {title}\n\n{text}")
    print(f"\n{text}\nwrote {path}")
