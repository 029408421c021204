#!/usr/bin/env python3
"""Golden fixture for gattn's optimizer: torch.optim.AdamW + warm-up/cosine schedule + global-norm
clipping over 10 steps, from the same weights and gradients.

Writes tests/fixtures/optimizer/adamw_cosine_clip.safetensors:
  param.<name>            F32  initial parameters (every tensor of the config below)
  grad.<step>.<name>      F32  the gradient fed at step 1..10 (random; some steps large to clip)
  after.<step>.<name>     F32  torch's parameters after that step
  __metadata__: config (model config JSON), options (lr, min_lr, warmup, steps, betas, eps,
  weight_decay, no_decay, grad_clip), lrs (the learning rate used at each step).
The schedule formula is gattn's documented one (src/train/schedule.h); the optimizer, its weight
decay handling and clipping are torch's own.
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gattn_ref as ref  # noqa: E402
from make_fixtures import write_safetensors  # noqa: E402

torch.set_num_threads(1)
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

CONFIG = {"vocab_size": 24, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
          "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 20,
          "gate": {"position": "sdpa", "granularity": "headwise"}}
OPTIONS = {"lr": 3e-2, "min_lr": 3e-3, "warmup_steps": 3, "steps": 10, "beta1": 0.9, "beta2": 0.95,
           "eps": 1e-8, "weight_decay": 0.1, "no_decay": ["norm", ".logit"], "grad_clip": 1.0}


def lr_at(step):  # warm-up then cosine, as gattn's Schedule::lr
    o = OPTIONS
    if step < o["warmup_steps"]:
        return o["lr"] * (step + 1) / o["warmup_steps"]
    progress = min(1.0, (step - o["warmup_steps"]) / max(1, o["steps"] - o["warmup_steps"]))
    return o["min_lr"] + 0.5 * (o["lr"] - o["min_lr"]) * (1 + math.cos(math.pi * progress))


def main():
    rng = np.random.default_rng(20251129)
    shapes = ref.param_shapes(CONFIG)
    params = {n: torch.tensor(rng.standard_normal(s).astype(np.float32) * 0.5) for n, s in shapes.items()}
    tensors = {"param." + n: p.clone() for n, p in params.items()}
    decay = [p for n, p in params.items() if not any(k in n for k in OPTIONS["no_decay"])]
    no_decay = [p for n, p in params.items() if any(k in n for k in OPTIONS["no_decay"])]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": OPTIONS["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=OPTIONS["lr"], betas=(OPTIONS["beta1"], OPTIONS["beta2"]),
                            eps=OPTIONS["eps"], foreach=False)
    lrs, clipped = [], 0
    for step in range(OPTIONS["steps"]):
        scale = 0.01 if step % 3 else 3.0  # every third step's gradient is large enough to clip
        for n, p in params.items():
            p.grad = torch.tensor(rng.standard_normal(p.shape).astype(np.float32) * scale)
            tensors["grad.%d.%s" % (step + 1, n)] = p.grad.clone()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), OPTIONS["grad_clip"])
        clipped += bool(norm > OPTIONS["grad_clip"])
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        lrs.append(lr_at(step))
        opt.step()
        for n, p in params.items():
            tensors["after.%d.%s" % (step + 1, n)] = p.detach().clone()
    out = os.path.join(ROOT, "tests", "fixtures", "optimizer")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "adamw_cosine_clip.safetensors")
    write_safetensors(path, {k: v.numpy() for k, v in tensors.items()},
                      {"config": json.dumps(CONFIG, sort_keys=True), "options": json.dumps(OPTIONS, sort_keys=True),
                       "lrs": json.dumps(lrs), "torch": torch.__version__})
    print("wrote %s: %d steps, %d clipped, %d tensors" % (path, OPTIONS["steps"], clipped, len(shapes)))


if __name__ == "__main__":
    main()
