#!/usr/bin/env python3
"""Golden fixture for RoPE context extension: Hugging Face transformers' own inverse frequencies
and attention factor (ROPE_INIT_FUNCTIONS) for linear, YaRN and NTK-aware scaling.

Writes tests/fixtures/rope_scaling.json: a list of cases {rotary_dim, theta, rope_scaling,
inv_freq, attention_factor, generator}. HF has no static NTK-aware type; its "dynamic" type at
sequence length L * (2s - 1) / s computes exactly the NTK-aware base theta * s^(d / (d - 2)), so
the ntk cases are anchored to it.
"""
import json
import os

import torch
import transformers
from transformers import Qwen3Config
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CASES = [  # (head_dim, partial_rotary_factor, theta, max_position_embeddings, rope_scaling)
    (64, 1.0, 10000.0, 256, {"rope_type": "linear", "factor": 4.0}),
    (64, 1.0, 10000.0, 256, {"rope_type": "ntk", "factor": 4.0}),
    (64, 1.0, 10000.0, 256, {"rope_type": "ntk", "factor": 8.0}),
    (64, 1.0, 10000.0, 256, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}),
    (64, 1.0, 10000.0, 256, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 256,
                             "beta_fast": 16.0, "beta_slow": 2.0}),
    (128, 0.25, 1000000.0, 4096, {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096}),
]


def hf(head_dim, partial, theta, max_pos, scaling):
    params = dict(scaling, rope_theta=theta, partial_rotary_factor=partial)
    seq_len = None
    if scaling["rope_type"] == "ntk":
        params["rope_type"] = "dynamic"
        s = scaling["factor"]
        seq_len = max_pos * (2 * s - 1) / s
    cfg = Qwen3Config(head_dim=head_dim, hidden_size=head_dim * 2, num_attention_heads=2,
                      max_position_embeddings=max_pos, rope_parameters=params)
    cfg.partial_rotary_factor = partial
    fn = ROPE_INIT_FUNCTIONS[params["rope_type"]]
    if seq_len is None:
        inv_freq, factor = fn(cfg, "cpu")
    else:
        inv_freq, factor = fn(cfg, "cpu", seq_len=torch.tensor(seq_len))
    return [float(x) for x in inv_freq], float(factor)


def main():
    out = []
    for head_dim, partial, theta, max_pos, scaling in CASES:
        inv_freq, factor = hf(head_dim, partial, theta, max_pos, scaling)
        assert len(inv_freq) == int(head_dim * partial) // 2
        out.append({"rotary_dim": int(head_dim * partial), "theta": theta, "rope_scaling": scaling,
                    "inv_freq": inv_freq, "attention_factor": factor,
                    "generator": f"transformers {transformers.__version__}, torch {torch.__version__}"})
    path = os.path.join(ROOT, "tests", "fixtures", "rope_scaling.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path}: {len(out)} cases")


if __name__ == "__main__":
    main()
