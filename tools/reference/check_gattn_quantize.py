#!/usr/bin/env python3
"""`gattn quantize` against llama.cpp on a real model: the model exported as a Hugging Face folder
(f32), written as GGUF by both engines — llama.cpp: bench/compare_llama_cpp.py's F32/BF16 writer,
then llama_model_quantize to Q8_0, Q4_0, Q4_K_M; gattn: `gattn quantize --type ...` — and every
tensor compared (type and bytes). Then llama.cpp loads gattn's Q4_K_M file and tokenizes TEXT,
which must give the ids gattn's tokenizer gives.

usage: tools/reference/.venv/bin/python tools/reference/check_gattn_quantize.py --checkpoint MODEL
           --tokenizer tokenizer.json --text FILE --llama-cpp SDIST [--gattn build/gattn]
(LLAMA_CPP_LIB_PATH: a build without AMX, as make_quantized_fixtures.py says)"""
import argparse
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import compare_llama_cpp  # noqa: E402
import llama_cpp_sdist  # noqa: E402

TYPES = ["f32", "bf16", "q8_0", "q4_0", "q4_k_m"]


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return done.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--text", required=True)
    p.add_argument("--llama-cpp", required=True)
    p.add_argument("--gattn", default=os.path.join(ROOT, "build", "gattn"))
    a = p.parse_args()
    llama_cpp = llama_cpp_sdist.bindings(a.llama_cpp)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gattn_check_quantize_") as tmp:
        hf = os.path.join(tmp, "hf")
        run([a.gattn, "export", "--checkpoint", a.checkpoint, "--format", "qwen3", "--dtype", "f32", "--out", hf])
        f32 = os.path.join(tmp, "llama-f32.gguf")
        compare_llama_cpp.write_gguf(hf, f32, "f32")
        for t in TYPES:
            theirs = os.path.join(tmp, f"llama-{t}.gguf")
            if t == "bf16":
                compare_llama_cpp.write_gguf(hf, theirs, "bf16")
            elif t != "f32":
                llama_cpp_sdist.quantize(llama_cpp, f32, theirs, t)
            ours = os.path.join(tmp, f"gattn-{t}.gguf")
            run([a.gattn, "quantize", "--checkpoint", a.checkpoint, "--tokenizer", a.tokenizer,
                 "--type", t, "--out", ours])
            mine = {x.name: x for x in GGUFReader(ours).tensors}
            other = {x.name: x for x in GGUFReader(theirs).tensors}
            differ = [n for n in other if n not in mine or mine[n].tensor_type != other[n].tensor_type
                      or mine[n].data.tobytes() != other[n].data.tobytes()]
            extra = sorted(set(mine) - set(other))
            print(f"{t}: {len(other)} tensors, {len(other) - len(differ)} equal in type and bytes"
                  + (f"; differ: {differ[:5]}" if differ else "") + (f"; only gattn's: {extra}" if extra else ""))
            failures += bool(differ or extra)
        llm = llama_cpp.Llama(model_path=os.path.join(tmp, "gattn-q4_k_m.gguf"), n_ctx=64, verbose=False,
                              vocab_only=True)
        with open(a.text, "rb") as f:
            text = f.read()
        theirs = llm.tokenize(text, add_bos=False, special=False)
        ours = [int(x) for x in run([a.gattn, "tokenizer", "encode", "--tokenizer", a.tokenizer,
                                     "--input", a.text]).split()]
        same = sum(x == y for x, y in zip(theirs, ours))
        print(f"tokenizer: llama.cpp {len(theirs)} ids, gattn {len(ours)}, "
              f"{'equal' if theirs == ours else f'first {same} equal'}")
        failures += theirs != ours
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
