"""Does llama.cpp run a Qwen3.5 hybrid as transformers does? The outside link between gattn's speed
comparison and the weights it runs (BENCHMARKS.md, issue 31): a tiny random Qwen3_5ForCausalLM
(layers L, L, L, F, r = 2 so the converter's tiled V-head order matters, Qwen3.5's full vocabulary
so that its tokenizer is recognised) saved by transformers, converted by llama.cpp's own
convert_hf_to_gguf.py (--outtype f32 --no-mtp: A_log -> -exp, +1 on the zero-centred norms, the
conv squeezed, V heads tiled), run by llama.cpp with an f32 KV cache; its logits on 80 tokens (a
chunk of 64 and a part) against transformers' fp32 logits, relative L2 printed. gattn's side of
the link is tests/fixtures/hf (gattn == transformers on qwen3_5 hybrids, <= 1e-5).

llama.cpp: the source tree in llama-cpp-python 0.3.36's sdist (vendor/llama.cpp, its converter
and gguf-py beside it) built with cmake (libllama.so in build/bin), driven through the sdist's
own llama_cpp bindings (LLAMA_CPP_LIB_PATH): see ../shared/research/llama-cpp-anchor.md.

usage: tools/reference/.venv/bin/python tools/reference/check_llama_cpp_qwen35.py
           --llama-cpp SDIST_DIR [--keep DIR]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import llama_cpp_sdist  # noqa: E402
from make_hf_fixtures import randomise  # noqa: E402

VOCAB = 248_320  # Qwen3.5's embedding rows (the tokenizer's 248,077 padded)
TOKENS = 80


def tiny_hybrid(seed):
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                layer_types=["linear_attention"] * 3 + ["full_attention"],
                num_attention_heads=4, num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-6,
                max_position_embeddings=1024, tie_word_embeddings=False,
                linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=32,
                linear_value_head_dim=32, linear_conv_kernel_dim=4,
                rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                     mrope_section=[2, 1, 1], mrope_interleaved=True))
    model = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**text))
    randomise(model, torch.Generator().manual_seed(seed), True)
    return model.float().eval()


def llama_cpp_logits(sdist, gguf_path, ids):
    llama_cpp = llama_cpp_sdist.bindings(sdist)
    f32 = 0  # GGML_TYPE_F32: the default f16 KV cache alone is ~1e-3 off an fp32 reference
    llm = llama_cpp.Llama(model_path=gguf_path, n_ctx=128, n_batch=128, n_ubatch=128, logits_all=True,
                          type_k=f32, type_v=f32, n_threads=1, verbose=False)
    llm.eval(ids)
    return np.array(llm.scores[:len(ids)], dtype=np.float64), llama_cpp.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", required=True, help="the unpacked llama-cpp-python sdist, built")
    ap.add_argument("--keep", help="keep the folder and the GGUF here")
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    folder = a.keep or tempfile.mkdtemp(prefix="gattn_qwen35_gguf_")
    os.makedirs(folder, exist_ok=True)
    model = tiny_hybrid(a.seed)
    model.save_pretrained(folder)
    llama_cpp_sdist.add_qwen_tokenizer(folder)
    gguf_path = llama_cpp_sdist.convert(a.llama_cpp, folder, os.path.join(folder, "model-f32.gguf"), "f32")
    ids = [int(x) for x in np.random.default_rng(a.seed).integers(0, 248_000, TOKENS)]
    with torch.no_grad():
        ref = model(input_ids=torch.tensor([ids])).logits[0].double().numpy()
    ours, version = llama_cpp_logits(a.llama_cpp, gguf_path, ids)
    error = np.linalg.norm(ours - ref) / np.linalg.norm(ref)
    worst_row = max(np.linalg.norm(ours[t] - ref[t]) / np.linalg.norm(ref[t]) for t in range(TOKENS))
    same_argmax = int((ours.argmax(1) == ref.argmax(1)).sum())
    print(f"llama-cpp-python {version}, transformers {__import__('transformers').__version__}: a "
          f"{sum(p.numel() for p in model.parameters()):,}-parameter Qwen3.5 hybrid (L, L, L, F; r = 2), "
          f"{TOKENS} tokens, GGUF f32, f32 KV cache")
    print(f"llama.cpp vs transformers logits: relative L2 {error:.3g} (worst token {worst_row:.3g}); "
          f"argmax equal at {same_argmax} of {TOKENS} tokens")
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
