"""Does gattn read llama.cpp's qwen35 files, quantized ones included, as llama.cpp runs them? A
random Qwen3_5ForCausalLM (layers L, L, L, F; r = 2 so the converter's tiled V-head order
matters; hidden 256 and every matrix's rows a multiple of 256 so the K-quants apply; ref-dense's
vocabulary of 8,192) saved by transformers, converted by llama.cpp's own convert_hf_to_gguf.py
(f32, with make_qwen35_gguf_fixtures.py's placeholder vocabulary) and quantized by llama.cpp's
own quantizer (llama_model_quantize: q8_0, q4_0, q4_k_m). For each file, the mean negative
log-likelihood over windows of a token shard from gattn (`gattn eval --json`) and from llama.cpp's
logits (bench/perplexity_gguf.py), and for the f32 file transformers' too (float32, the first
window). Then `gattn quantize` writes the folder as qwen35 files of the same types (with
TOKENIZER): each tensor's type and bytes against llama.cpp's file (ssm_a, -exp(A_log) in float32
on both sides, within an ulp), and llama.cpp runs gattn's files (the same table).

usage: tools/reference/.venv/bin/python tools/reference/check_gattn_qwen35_gguf.py \\
           --llama-cpp SDIST --data data/ref/val.bin --tokenizer data/ref/tokenizer.json
           [--gattn build/gattn] [--windows 4] [--keep DIR]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import llama_cpp_sdist  # noqa: E402
import perplexity_gguf  # noqa: E402
from make_hf_fixtures import randomise  # noqa: E402

SEQ = 256


def hybrid(seed):
    text = dict(vocab_size=8192, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                layer_types=["linear_attention"] * 3 + ["full_attention"],
                num_attention_heads=4, num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-6,
                max_position_embeddings=1024, tie_word_embeddings=False,
                linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=64,
                linear_value_head_dim=64, linear_conv_kernel_dim=4,
                rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                     mrope_section=[4, 2, 2], mrope_interleaved=True))
    model = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**text))
    randomise(model, torch.Generator().manual_seed(seed), True)
    return model.float().eval()


def converted(sdist, folder, out):
    """A process of its own: this one's torch threads would hang a forked child."""
    done = subprocess.run([sys.executable, os.path.join(HERE, "make_qwen35_gguf_fixtures.py"),
                           "--llama-cpp", sdist, "--folder", folder, "--outtype", "f32", "--out", out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"convert_hf_to_gguf.py failed:\n{done.stderr[-3000:]}")
    return out


def compare_tensors(ours, theirs):
    """Type and bytes of every tensor of llama.cpp's file against gattn's, summarised."""
    from gguf import GGUFReader
    mine = {x.name: x for x in GGUFReader(ours).tensors}
    other = {x.name: x for x in GGUFReader(theirs).tensors}
    equal, near, differ = 0, 0, []
    for name, t in other.items():
        m = mine.get(name)
        if m is not None and m.tensor_type == t.tensor_type and m.data.tobytes() == t.data.tobytes():
            equal += 1
        elif (m is not None and name.endswith("ssm_a") and m.tensor_type == t.tensor_type
              and np.allclose(m.data, t.data, rtol=1.2e-7, atol=0)):
            near += 1
        else:
            differ.append(f"{name} ({m.tensor_type.name if m is not None else 'missing'} vs "
                          f"{t.tensor_type.name})")
    extra = sorted(set(mine) - set(other))
    return (f"{len(other)} tensors, {equal} equal in type and bytes, {near} within an ulp (ssm_a)"
            + (f"; differ: {', '.join(differ)}" if differ else "")
            + (f"; only gattn's: {extra}" if extra else ""))


def transformers_nll(model, ids):
    x = torch.tensor([ids[:SEQ].tolist()])
    with torch.no_grad():
        logits = model(input_ids=x).logits[0].double()
    y = torch.tensor(ids[1:SEQ + 1].tolist())
    return float(torch.nn.functional.cross_entropy(logits, y))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", required=True)
    ap.add_argument("--data", required=True, help="a gattn token shard of ids below 8,192")
    ap.add_argument("--tokenizer", required=True, help="the shard's tokenizer.json (8,192 tokens)")
    ap.add_argument("--gattn", default=perplexity_gguf.GATTN)
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--keep")
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    folder = a.keep or tempfile.mkdtemp(prefix="gattn_qwen35_quant_")
    os.makedirs(folder, exist_ok=True)
    model = hybrid(a.seed)
    model.save_pretrained(os.path.join(folder, "hf"))
    f32 = converted(a.llama_cpp, os.path.join(folder, "hf"), os.path.join(folder, "model-f32.gguf"))
    llama_cpp = llama_cpp_sdist.bindings(a.llama_cpp)
    files = [f32] + [llama_cpp_sdist.quantize(llama_cpp, f32, os.path.join(folder, f"model-{t}.gguf"), t)
                     for t in ("q8_0", "q4_0", "q4_k_m")]
    types = ["f32", "q8_0", "q4_0", "q4_k_m"]
    ours = []
    for t, theirs in zip(types, files):
        out = os.path.join(folder, f"gattn-{t}.gguf")
        done = subprocess.run([a.gattn, "quantize", "--checkpoint", os.path.join(folder, "hf"),
                               "--tokenizer", a.tokenizer, "--type", t, "--out", out, "--force"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"gattn quantize --type {t} failed:\n{done.stderr[-2000:]}")
        ours.append(out)
        print(f"gattn quantize {t}: " + compare_tensors(out, theirs))
    files += ours
    ids = perplexity_gguf.read_shard(a.data)
    print(f"random Qwen3.5 hybrid (L, L, L, F; r = 2), {sum(p.numel() for p in model.parameters()):,} "
          f"parameters; {a.windows} windows of {SEQ} tokens of {a.data}")
    print(f"transformers (fp32) on window 0: {transformers_nll(model, ids):.6f} nats")
    print("| file | gattn loss | llama.cpp loss | ppl gattn/llama.cpp - 1 |")
    print("|---|---|---|---|")
    worst = 0.0
    for path in files:
        g, _ = perplexity_gguf.gattn_eval(a.gattn, path, a.data, SEQ, a.windows, 1)
        l, _ = perplexity_gguf.llama_eval(llama_cpp, path, ids, SEQ, a.windows, 1)
        worst = max(worst, abs(math.exp(g - l) - 1))
        print(f"| {os.path.basename(path)} | {g:.6f} | {l:.6f} | {100 * (math.exp(g - l) - 1):+.4f}% |", flush=True)
    print(f"worst |ppl ratio - 1|: {100 * worst:.4f}% (target 0.5%)")


if __name__ == "__main__":
    main()
