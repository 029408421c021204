#!/usr/bin/env python3
"""A Hugging Face qwen3 or qwen3_5 folder as GGUF files in the formats gattn reads: F32 and BF16
(qwen3: PyPI gguf's writer, bench/compare_llama_cpp.py's; qwen3_5: llama.cpp's own
convert_hf_to_gguf.py with a placeholder vocabulary, tools/reference/make_qwen35_gguf_fixtures.py)
and Q8_0, Q4_0, Q4_K_M by llama.cpp's own quantizer (its bindings: bench/llama_cpp_sdist.py). The
files the quantized speed and perplexity comparisons run, in both engines.

usage: tools/reference/.venv/bin/python bench/quantized_ggufs.py --folder HF --out DIR
           --llama-cpp SDIST [--types bf16,q8_0,q4_0,q4_k_m] [--keep-f32]
"""
import argparse
import os
import subprocess
import sys

import compare_llama_cpp
import llama_cpp_sdist


HERE = os.path.dirname(os.path.abspath(__file__))


def write_float_gguf(folder, path, dtype, sdist):
    """F32 or BF16: our qwen3 writer, or for a qwen3_5 folder llama.cpp's converter."""
    if not compare_llama_cpp.is_qwen35(folder):
        compare_llama_cpp.write_gguf(folder, path, dtype)
        return
    script = os.path.join(HERE, "..", "tools", "reference", "make_qwen35_gguf_fixtures.py")
    done = subprocess.run([sys.executable, script, "--llama-cpp", sdist, "--folder", folder,
                           "--outtype", dtype, "--out", path], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"convert_hf_to_gguf.py failed:\n{done.stderr[-3000:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--llama-cpp", required=True, help="a built llama-cpp-python 0.3.36 sdist")
    p.add_argument("--types", default=",".join(["bf16", *llama_cpp_sdist.FTYPES]))
    p.add_argument("--keep-f32", action="store_true")
    args = p.parse_args()
    llama_cpp = llama_cpp_sdist.bindings(args.llama_cpp)
    os.makedirs(args.out, exist_ok=True)
    f32 = os.path.join(args.out, "f32.gguf")
    write_float_gguf(args.folder, f32, "f32", args.llama_cpp)
    for name in args.types.split(","):
        if name == "bf16":
            out = os.path.join(args.out, "bf16.gguf")
            write_float_gguf(args.folder, out, "bf16", args.llama_cpp)
            print(f"wrote {out} ({os.path.getsize(out) / 1e6:.1f} MB)")
            continue
        out = llama_cpp_sdist.quantize(llama_cpp, f32, os.path.join(args.out, f"{name}.gguf"), name,
                                       threads=os.cpu_count())
        print(f"wrote {out} ({os.path.getsize(out) / 1e6:.1f} MB)")
    if not args.keep_f32:
        os.remove(f32)


if __name__ == "__main__":
    main()
