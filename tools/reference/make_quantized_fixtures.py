#!/usr/bin/env python3
"""Regenerate tests/fixtures/gguf/qwen3_k256_{q8_0,q4_0,q4_k_m}.gguf and quantized_expected.json:
a tiny Qwen3 made by transformers (seeded; every matrix's rows 256 values, so llama.cpp's
K-quants apply to each), written as an F32 GGUF by PyPI gguf (bench/compare_llama_cpp.py's qwen3
writer), then quantized by llama.cpp's own quantizer (llama_model_quantize through
llama-cpp-python's ctypes bindings: Q8_0, Q4_0 and Q4_K_M, which mixes Q4_K and Q6_K).

quantized_expected.json holds, for a fixed sequence of token ids, transformers' logits of the
float model and llama.cpp's logits of every file (fp32 KV cache, one thread): the outside
reference gattn's quantized kernels are tested against (tests/test_gguf_quantized.cpp). Printed:
llama.cpp's logits of the F32 file against transformers' (the conversion: ~1e-6), and of each
quantized file (what quantizing costs a model of random weights: large at 4 bits).

llama.cpp's AMX kernels (built where the CPU reports amx_int8) stop with SIGILL on tilezero on
some virtual machines: point LLAMA_CPP_LIB_PATH at a build with -DGGML_NATIVE=OFF and the AVX-512
options on, AMX off (bench/README.md).

usage: tools/reference/.venv/bin/python tools/reference/make_quantized_fixtures.py \
           --llama-cpp /path/to/llama_cpp_python-0.3.36   (built: README of bench/)
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import compare_llama_cpp  # noqa: E402
import llama_cpp_sdist  # noqa: E402

OUT = os.path.join(ROOT, "tests", "fixtures", "gguf")
IDS = [3, 17, 250, 9, 101, 42, 7, 199, 64, 128, 5, 77]


def tiny_qwen3(folder):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    torch.manual_seed(34)
    config = Qwen3Config(vocab_size=256, hidden_size=256, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=64, max_position_embeddings=128, rms_norm_eps=1e-6,
                         tie_word_embeddings=False, initializer_range=0.05)
    model = Qwen3ForCausalLM(config).float().eval()
    with torch.no_grad():  # norms away from 1, so that a norm read wrong shows
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(1 + 0.2 * torch.randn_like(p))
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        logits = model(torch.tensor([IDS])).logits[0].numpy().astype(np.float32)
    return logits


def llama_logits(llama_cpp, path):
    llm = llama_cpp.Llama(model_path=path, n_ctx=64, logits_all=True, verbose=False, n_threads=1,
                          type_k=0, type_v=0)  # GGML_TYPE_F32 KV cache
    llm.eval(IDS)
    return np.array(llm.scores[:len(IDS)], dtype=np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--llama-cpp", required=True, help="a built llama-cpp-python 0.3.36 sdist")
    args = p.parse_args()
    llama_cpp = llama_cpp_sdist.bindings(args.llama_cpp)
    expected = {"ids": IDS, "files": {}}
    with tempfile.TemporaryDirectory(prefix="gattn_quant_") as tmp:
        hf = os.path.join(tmp, "hf")
        reference = tiny_qwen3(hf)
        expected["transformers"] = reference.reshape(-1).tolist()
        f32 = os.path.join(tmp, "f32.gguf")
        compare_llama_cpp.write_gguf(hf, f32, "f32")
        error = np.linalg.norm(llama_logits(llama_cpp, f32) - reference) / np.linalg.norm(reference)
        print(f"F32 GGUF: llama.cpp logits vs transformers' relative L2 {error:.3g} (the conversion)")
        for name in llama_cpp_sdist.FTYPES:
            out = llama_cpp_sdist.quantize(llama_cpp, f32, os.path.join(OUT, f"qwen3_k256_{name}.gguf"),
                                           name)
            ours = llama_logits(llama_cpp, out)
            error = np.linalg.norm(ours - reference) / np.linalg.norm(reference)
            print(f"{out} ({os.path.getsize(out)} bytes): llama.cpp logits vs transformers' "
                  f"(float model) relative L2 {error:.3g}")
            expected["files"][name] = ours.reshape(-1).tolist()
    with open(os.path.join(OUT, "quantized_expected.json"), "w") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
