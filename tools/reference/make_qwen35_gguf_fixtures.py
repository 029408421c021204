#!/usr/bin/env python3
"""Regenerate tests/fixtures/gguf/qwen35_*.gguf: tiny Qwen3.5 models saved by transformers
(tests/fixtures/hf/qwen3_5_*) converted by llama.cpp's own convert_hf_to_gguf.py (the sdist of
llama-cpp-python 0.3.36, vendor/llama.cpp), so every tensor transform is llama.cpp's: the
zero-centred norms stored as 1 + w, A_log as A = -exp(A_log), the conv kernel squeezed, dt_bias
renamed, the Gated DeltaNet's V heads reordered from grouped to tiled (r = 2 here), q_proj kept
with its per-head gate rows. The one change: the folders' 64-token vocabularies have no
tokenizer, so the converter's set_vocab is replaced by a placeholder vocabulary (as
bench/compare_llama_cpp.py's qwen3 writer writes); llama.cpp loads such a file.

- qwen35_hybrid_f32.gguf: qwen3_5_hybrid_f32 (layers L, L, F), --outtype f32.
- qwen35_hybrid_tied_bf16.gguf: qwen3_5_hybrid_tied_bf16_sharded (tied embeddings), --outtype bf16.
- qwen35_dense_f32.gguf: qwen3_5_f32 (two gated full-attention layers), --outtype f32.

Each folder's reference.safetensors (transformers' logits) is what gattn's test compares with.

usage: tools/reference/.venv/bin/python tools/reference/make_qwen35_gguf_fixtures.py \
           --llama-cpp SDIST_DIR [--folder HF_FOLDER --outtype f32|bf16 --out FILE.gguf]
(with --folder: that one folder converted, as tools/reference/check_gattn_qwen35_gguf.py asks)
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HF = os.path.join(HERE, "..", "..", "tests", "fixtures", "hf")
OUT = os.path.join(HERE, "..", "..", "tests", "fixtures", "gguf")
FIXTURES = [("qwen3_5_hybrid_f32", "f32", "qwen35_hybrid_f32.gguf"),
            ("qwen3_5_hybrid_tied_bf16_sharded", "bf16", "qwen35_hybrid_tied_bf16.gguf"),
            ("qwen3_5_f32", "f32", "qwen35_dense_f32.gguf")]


def placeholder_vocab(self):
    """The converter's set_vocab for a folder without a tokenizer: the config's vocabulary of
    placeholder tokens and one merge (a GPT-2 style BPE llama.cpp accepts)."""
    import gguf
    vocab = self.hparams["vocab_size"]
    self.gguf_writer.add_tokenizer_model("gpt2")
    self.gguf_writer.add_tokenizer_pre("qwen35")
    self.gguf_writer.add_token_list(["a", "b", "ab"] + [f"<placeholder {i}>" for i in range(3, vocab)])
    self.gguf_writer.add_token_types([gguf.TokenType.NORMAL] * vocab)
    self.gguf_writer.add_token_merges(["a b"])
    self.gguf_writer.add_bos_token_id(0)
    self.gguf_writer.add_eos_token_id(1)


def convert(sdist, folder, outtype, out):
    root = os.path.join(sdist, "vendor", "llama.cpp")
    sys.path[:0] = [root, os.path.join(root, "gguf-py")]
    import convert_hf_to_gguf
    from conversion import qwen
    qwen.Qwen3_5TextModel.set_vocab = placeholder_vocab
    sys.argv = ["convert_hf_to_gguf.py", folder, "--outtype", outtype, "--no-mtp", "--outfile", out]
    convert_hf_to_gguf.main()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", required=True, help="the unpacked llama-cpp-python 0.3.36 sdist")
    ap.add_argument("--folder")
    ap.add_argument("--outtype", default="f32")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.folder:
        convert(a.llama_cpp, a.folder, a.outtype, a.out)
        return
    for folder, outtype, name in FIXTURES:
        pid = os.fork()  # the converter registers its classes once per process
        if pid == 0:
            convert(a.llama_cpp, os.path.join(HF, folder), outtype, os.path.join(OUT, name))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            sys.exit(f"converting {folder} failed")
        with open(os.path.join(HF, folder, "config.json")) as f:
            print(name, "<-", folder, json.load(f)["text_config"]["layer_types"])


if __name__ == "__main__":
    main()
