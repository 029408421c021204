"""Writes a Hugging Face Qwen3 folder of a gattn config's shape with random bf16 weights
(config.json, two safetensors shards and their index), for measuring the loader's time and peak
memory on a real-sized model (docs/INTEROP.md). Numpy only; the values are a reused block of
normal(0, 0.02) draws, not a trained model.

usage: random_hf_checkpoint.py CONFIG OUT_DIR     e.g. configs/paper/dense_1.7b.json /tmp/q17
"""
import json
import os
import sys

import numpy as np


def tensors(c):
    V, C, I, L = c["vocab_size"], c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    H, K, d = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"]), c["head_dim"]
    out = [("model.embed_tokens.weight", [V, C])]
    for l in range(L):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", [C]), (p + "self_attn.q_proj.weight", [H * d, C]),
                (p + "self_attn.k_proj.weight", [K * d, C]), (p + "self_attn.v_proj.weight", [K * d, C]),
                (p + "self_attn.q_norm.weight", [d]), (p + "self_attn.k_norm.weight", [d]),
                (p + "self_attn.o_proj.weight", [C, H * d]), (p + "post_attention_layernorm.weight", [C]),
                (p + "mlp.gate_proj.weight", [I, C]), (p + "mlp.up_proj.weight", [I, C]),
                (p + "mlp.down_proj.weight", [C, I])]
    out.append(("model.norm.weight", [C]))
    if not c.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [V, C]))
    return out


def write_shard(path, entries, block):
    header, offset = {}, 0
    for name, shape in entries:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name, shape in entries:
            n = int(np.prod(shape))
            for start in range(0, n, block.size):
                f.write(block[: min(block.size, n - start)].tobytes())


def main():
    config_path, out = sys.argv[1], sys.argv[2]
    c = json.load(open(config_path))
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    normal = (rng.standard_normal(1 << 24) * 0.02).astype(np.float32)
    block = (normal.view(np.uint32) >> 16).astype(np.uint16)  # bf16 by truncation
    entries = tensors(c)
    half = len(entries) // 2
    shards = [entries[:half], entries[half:]]
    weight_map = {}
    for i, part in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(os.path.join(out, name), part, block)
        weight_map.update({t: name for t, _ in part})
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(out, "model.safetensors.index.json"), "w"), indent=2)
    hf = {k: v for k, v in c.items() if k not in ("gate", "use_qk_norm")}
    hf.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_act="silu",
              attention_bias=False, torch_dtype="bfloat16")
    json.dump(hf, open(os.path.join(out, "config.json"), "w"), indent=2)
    print(f"{out}: {len(entries)} tensors in {len(shards)} shards")


if __name__ == "__main__":
    main()
