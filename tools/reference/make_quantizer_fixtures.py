#!/usr/bin/env python3
"""Regenerate tests/fixtures/gguf/quantizer_expected.json: what llama.cpp's own quantizer writes
for every tensor of a model whose float values are those of the committed
tests/fixtures/gguf/qwen3_k256_q8_0.gguf (each Q8_0 block's d * q, exact in float): the file
requantized by llama_model_quantize (allow_requantize: llama.cpp dequantizes to float first, as
gattn's f32 loading does) to Q8_0, Q4_0 and Q4_K_M. Per file type and tensor: its ggml type name
and the XXH3-64 of its bytes (gattn's checksum64). tests/test_quantize_blocks.cpp quantizes the
same values in memory (model/quantize_model.h) and compares type and checksum, tensor by tensor.

usage: tools/reference/.venv/bin/python tools/reference/make_quantizer_fixtures.py \\
           --llama-cpp /path/to/llama_cpp_python-0.3.36   (LLAMA_CPP_LIB_PATH: a build without AMX,
           as make_quantized_fixtures.py says)
"""
import argparse
import json
import os
import sys
import tempfile

import xxhash
from gguf import GGUFReader

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import llama_cpp_sdist  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "gguf")
SOURCE = "qwen3_k256_q8_0.gguf"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--llama-cpp", required=True, help="a built llama-cpp-python 0.3.36 sdist")
    args = p.parse_args()
    llama_cpp = llama_cpp_sdist.bindings(args.llama_cpp)
    expected = {"source": SOURCE, "types": {}}
    with tempfile.TemporaryDirectory(prefix="gattn_quantizer_") as tmp:
        for name in llama_cpp_sdist.FTYPES:
            out = llama_cpp_sdist.quantize(llama_cpp, os.path.join(FIXTURES, SOURCE),
                                           os.path.join(tmp, f"{name}.gguf"), name, requantize=True)
            tensors = {}
            for t in GGUFReader(out).tensors:
                tensors[t.name] = {"type": t.tensor_type.name.lower().replace("_k", "_K"),
                                   "xxh3": f"{xxhash.xxh3_64_intdigest(t.data.tobytes()):016x}"}
            expected["types"][name] = tensors
            kinds = sorted({v["type"] for v in tensors.values()})
            print(f"{name}: {len(tensors)} tensors, types {', '.join(kinds)}")
    with open(os.path.join(FIXTURES, "quantizer_expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
