"""gattn export, checked by transformers: exports each golden fixture (tests/fixtures/hf/) with
`gattn export --dtype f32` into a Hugging Face layout, loads the result with transformers'
AutoModelForCausalLM and compares its fp32 logits with the fixture's reference logits.
The authors' and Qwen3.5 fixtures are exported as qwen3_next too, the hybrids (Gated DeltaNet
layers) as qwen3_5 (Qwen3_5ForCausalLM) and qwen3_next: the same function in another layout.

usage (venv of make_hf_fixtures.sh): .venv-hf/bin/python check_hf_export.py GATTN_BINARY
"""
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures", "hf")
CASES = [("qwen3_f32", "qwen3"), ("qwen3_bf16_sharded", "qwen3"), ("qwen3_next_f32", "qwen3_next"),
         ("authors_elementwise_f32", "qwen3_next"), ("authors_headwise_bf16", "authors"),
         ("qwen3_5_f32", "qwen3_next"), ("qwen3_5_f32", "qwen3_5"),
         ("qwen3_5_hybrid_f32", "qwen3_5"), ("qwen3_5_hybrid_f32", "qwen3_next"),
         ("qwen3_5_hybrid_tied_bf16_sharded", "qwen3_5"), ("qwen3_next_hybrid_f32", "qwen3_next"),
         ("qwen3_next_hybrid_f32", "qwen3_5"), ("qwen3_next_moe_f32", "qwen3_next"),
         ("qwen3_next_moe_f32", "qwen3_5"), ("qwen3_next_moe_hybrid_f32", "qwen3_next"),
         ("qwen3_5_moe_hybrid_f32", "qwen3_5"),
         ("qwen3_5_moe_hybrid_f32", "qwen3_next")]


def main():
    gattn = sys.argv[1]
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for fixture, fmt in CASES:
            out = os.path.join(tmp, f"{fixture}-{fmt}")
            subprocess.run([gattn, "export", "--checkpoint", os.path.join(FIXTURES, fixture),
                            "--format", fmt, "--dtype", "f32", "--out", out], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ref = load_file(os.path.join(FIXTURES, fixture, "reference.safetensors"))
            if fmt == "authors":  # not a transformers architecture: gattn's loader checks it
                print(f"{fixture:26s} -> {fmt:10s} (no transformers class; see test_hf_export)")
                continue
            model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
            with torch.no_grad():
                logits = model(input_ids=ref["input_ids"]).logits[0]
            err = ((logits - ref["logits"]).norm() / ref["logits"].norm()).item()
            worst = max(worst, err)
            print(f"{fixture:26s} -> {fmt:10s} {type(model).__name__:22s} logits rel. L2 {err:.2e}")
    print(f"worst {worst:.2e}")
    sys.exit(0 if worst < 1e-5 else 1)


if __name__ == "__main__":
    main()
