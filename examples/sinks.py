#!/usr/bin/env python3
"""The attention sink from Python (docs/PYTHON.md): per-head first-token attention of a baseline
and a G1-gated model, the G1 model with its gates held open by hooks, and the baseline with a G1
gate retrofitted and fine-tuned a few steps; one PNG of the four maps.

    scripts/quickstart.sh       # trains runs/quickstart/{baseline,g1}-s0 (or use your own runs)
    python examples/sinks.py --baseline runs/quickstart/baseline-s0 --g1 runs/quickstart/g1-s0 \\
        --run-config configs/quickstart/run.json --steps 30 --out examples/sinks.png

The attention maps are measured on the first --windows windows of --seq tokens of the run
config's validation shard, each starting at a document's first token, as `gattn analyze` reads
them. The fine-tuning trains the run config's data with its optimizer for --steps steps (eval
and checkpoints off), from the baseline's newest checkpoint, into a temporary folder."""
import argparse
import json
import os
import tempfile

import numpy as np

import gattn


def windows(run_config, count, seq):
    """count windows of seq tokens from the run config's validation shard, from its start."""
    data = run_config["data"]
    shard = gattn.read_tokens(data.get("val") or data["train"], count * seq)
    if len(shard["ids"]) < count * seq:
        raise SystemExit(f"the shard has {len(shard['ids'])} tokens, fewer than {count} x {seq}")
    return shard["ids"].reshape(count, seq)


def first_token_attention(model, ids, **forward):
    """[layers, heads]: mean attention on position 0 of the queries after it (forward: more
    keywords of Model.forward, such as hooks)."""
    c = model.config
    pairs = [(l, h) for l in range(c["num_hidden_layers"]) for h in range(c["num_attention_heads"])]
    _, got = model.forward(ids, attention=pairs, **forward)
    out = np.zeros((c["num_hidden_layers"], c["num_attention_heads"]))
    for (l, h), p in got["attention"].items():
        out[l, h] = p[:, 1:, 0].mean()
    return out


def next_token_loss(logits, ids):
    """Mean cross-entropy (nats) of each position's prediction of the next token."""
    x = logits[:, :-1].astype(np.float64)
    x -= x.max(-1, keepdims=True)
    logp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return float(-np.take_along_axis(logp, ids[:, 1:, None], -1).mean())


def gates_held_open():
    """Hooks that give the gate's output its input (score 1): every head of every layer."""
    held = {}

    def keep(layer, gate_input):
        held[layer] = gate_input.copy()

    def write(layer, gate_output):
        gate_output[...] = held.pop(layer)
    return {"gate_input": keep, "gate_output": write}


def absolute(path, base):
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base, path))


def read_run_config(path):
    """The run config with its paths made absolute (they are relative to its folder)."""
    with open(path) as f:
        run = json.load(f)
    base = os.path.dirname(os.path.abspath(path))
    if isinstance(run["model"], str):
        run["model"] = absolute(run["model"], base)
    run["data"] = {k: absolute(v, base) if k in ("train", "val", "tokenizer") else v
                   for k, v in run["data"].items()}
    return run


def fine_tune_config(run_config, steps, out):
    """The run config for `steps` steps into out, eval and checkpoints off."""
    run = json.loads(json.dumps(run_config))
    run.update(steps=steps, out=out, eval={"every": 0, "windows": 8},
               checkpoint={"every": 0, "keep": 1})
    run["schedule"] = dict(run.get("schedule", {}), warmup_steps=max(1, steps // 5))
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--baseline", required=True, help="the baseline's run or checkpoint folder")
    p.add_argument("--g1", required=True, help="the G1 model's run or checkpoint folder")
    p.add_argument("--run-config", required=True, help="the run config both were trained with")
    p.add_argument("--windows", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--steps", type=int, default=30, help="fine-tuning steps of the retrofit")
    p.add_argument("--out", default="sinks.png")
    a = p.parse_args()
    run_config = read_run_config(a.run_config)
    ids = windows(run_config, a.windows, a.seq)
    baseline, g1 = gattn.load(a.baseline), gattn.load(a.g1)
    maps, losses = {}, {}
    for name, model in (("baseline", baseline), ("G1", g1)):
        maps[name] = first_token_attention(model, ids)
        losses[name] = next_token_loss(model.forward(ids), ids)

    # G1 with every gate held open by hooks: the same as the CLI's --intervene gate=open
    opened = g1.forward(ids, hooks=gates_held_open())
    assert np.array_equal(opened, g1.forward(ids, interventions="gate=open"))
    losses["G1, gates held open"] = next_token_loss(opened, ids)
    maps["G1, gates held open"] = first_token_attention(g1, ids, hooks=gates_held_open())

    # the baseline with G1's gate retrofitted, fine-tuned; "init": "identity": the gate starts at
    # 0.5 with each o_proj doubled, so the first logits are the baseline's (docs/TRAINING.md)
    with tempfile.TemporaryDirectory() as work:
        config_path = os.path.join(work, "run.json")
        with open(config_path, "w") as f:
            json.dump(fine_tune_config(run_config, a.steps, os.path.join(work, "run")), f)
        records = []
        gate = json.dumps(dict(g1.config["gate"], init="identity"))
        gattn.train(config_path, init_from=baseline.path, gate=gate,
                    callback=records.append)
        tuned = gattn.load(os.path.join(work, "run"))
        name = f"baseline + G1 gate, {a.steps} steps"
        maps[name] = first_token_attention(tuned, ids)
        losses[name] = next_token_loss(tuned.forward(ids), ids)

    summary = {"windows": a.windows, "seq": a.seq, "uniform_first_token": uniform_first_token(a.seq),
               "first_token_attention_mean": {k: float(v.mean()) for k, v in maps.items()},
               "loss": losses, "fine_tune_first_last_loss": [records[0]["loss"],
                                                             records[-1]["loss"]]}
    print(json.dumps(summary, indent=1))
    plot(maps, losses, uniform_first_token(a.seq), a.out)
    print(f"wrote {a.out}")


def uniform_first_token(seq):
    """The first-token attention of uniform causal attention: the mean of 1/(t+1), t >= 1."""
    return float(np.mean(1.0 / np.arange(2, seq + 1)))


def plot(maps, losses, uniform, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(maps), figsize=(3.2 * len(maps), 3.6), constrained_layout=True)
    top = max(max(float(m.max()) for m in maps.values()), uniform)
    for ax, (name, m) in zip(axes, maps.items()):
        im = ax.imshow(m, vmin=0, vmax=top, cmap="viridis", aspect="auto")
        ax.set_title(f"{name}\nmean {m.mean():.3f}, loss {losses[name]:.3f}", fontsize=8)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(m.shape[1]))
        ax.set_yticks(range(m.shape[0]))
    fig.colorbar(im, ax=axes, shrink=0.8, label="attention on the first token")
    fig.suptitle(f"per-head first-token attention (uniform attention: {uniform:.3f})", fontsize=9)
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main()
