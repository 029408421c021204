#!/usr/bin/env python3
"""Regenerate tests/fixtures/gguf/ with PyPI `gguf` (llama.cpp's own Python writer and
dequantizers; pinned: gguf==0.19.0), the GGUF reader's outside reference:

- reader.gguf: metadata of every GGUF value type (scalars and arrays, a u64 above 2^63, a
  non-default alignment of 64) and one small tensor of every type gattn reads — F32, F16, BF16,
  Q8_0, Q4_0 written by gguf's quantizer from seeded values; Q4_K and Q6_K (which gguf cannot
  quantize) as seeded random blocks with their scales replaced by finite halves.
- reader.json: what gguf's reader reads back: each metadata value, each tensor's type, shape,
  data offset and byte count, and its values as gguf's dequantizer gives them (float32).
- tokenizer_{qwen2,qwen35,gpt2}.gguf: a tokenizer.json (qwen2, qwen35: 700-token BPEs trained here
  by HF `tokenizers` as Qwen's are made, NFC and Qwen2's or Qwen3.5's regex; gpt2:
  tests/fixtures/tokenizer/hf_gpt2_style.json, ByteLevel's GPT-2 regex) in a GGUF file's
  tokenizer.ggml.* metadata as llama.cpp's converter writes it (tokens
  by id, added special tokens CONTROL, other added tokens USER_DEFINED, merges "a b", the
  pre-tokenizer's name), and tokenizer_expected.json: Hugging Face `tokenizers`' ids of every line
  of tests/fixtures/tokenizer/edge_cases.txt under each tokenizer.json (the outside reference).
- qwen3_{f32,f16,bf16}.gguf: tests/fixtures/hf/qwen3_f32 (a tiny Qwen3 saved by transformers)
  written by bench/compare_llama_cpp.py's qwen3 writer (PyPI gguf; llama.cpp's tensor names, its
  metadata keys, a placeholder vocabulary): matrices in F32, F16 or BF16, norms in F32.

usage: python3 -m pip install gguf==0.19.0 numpy; python3 tools/reference/make_gguf_fixtures.py
"""
import json
import os

import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import compare_llama_cpp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "fixtures", "gguf")


def finite_half_scales(blocks, offsets):
    """Puts a finite fp16 scale (in [2^-12, 2^-6)) at each byte offset of every block."""
    rng = np.random.default_rng(7)
    for off in offsets:
        scale = (rng.uniform(2.0 ** -12, 2.0 ** -6, size=blocks.shape[0])).astype(np.float16)
        blocks[:, off:off + 2] = scale.view(np.uint8).reshape(-1, 2)
    return blocks


def k_quant_blocks(qtype, rows, cols, seed):
    """Random blocks of a K-quant type (gguf can dequantize them, not write them)."""
    block_values, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = rows * cols // block_values
    raw = np.random.default_rng(seed).integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    # Q4_K: d and dmin are its first two halves; Q6_K: d is its last two bytes.
    offsets = [0, 2] if qtype == gguf.GGMLQuantizationType.Q4_K else [block_bytes - 2]
    return finite_half_scales(raw, offsets).reshape(rows, cols // block_values * block_bytes)


QWEN35_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def trained_nfc_bpe(texts, regex):
    """A byte-level BPE of 700 tokens trained by HF `tokenizers` on the texts, as Qwen's
    tokenizer.json is made: NFC, a Split on `regex`, ByteLevel without its own regex; special
    <|endoftext|>, added non-special <think>. Merges across letters and marks make the two Qwen
    regexes give different ids."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(texts * 3, trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    t.add_tokens(["<think>"])
    return json.loads(t.to_str())


def tokenizer_ggufs():
    """The tokenizer fixtures: each tokenizer.json as GGUF metadata, and HF's ids of the texts."""
    from tokenizers import Tokenizer
    src = os.path.join(HERE, "..", "..", "tests", "fixtures", "tokenizer")
    with open(os.path.join(src, "edge_cases.txt"), encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    with open(os.path.join(src, "tiny_nfc.json"), encoding="utf-8") as f:
        qwen2_regex = json.load(f)["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    cases = {"qwen2": ("qwen2", trained_nfc_bpe(texts, qwen2_regex)),
             "qwen35": ("qwen35", trained_nfc_bpe(texts, QWEN35_REGEX)),
             "gpt2": ("gpt-2", json.load(open(os.path.join(src, "hf_gpt2_style.json"), encoding="utf-8")))}
    expected = {"texts": texts}
    for name, (pre, tj) in cases.items():
        hf = Tokenizer.from_str(json.dumps(tj))
        expected[name] = [hf.encode(t, add_special_tokens=False).ids for t in texts]
        vocab = dict(tj["model"]["vocab"])
        added = {a["id"]: a for a in tj["added_tokens"]}
        size = max(list(vocab.values()) + list(added)) + 1
        by_id = {i: t for t, i in vocab.items()}
        tokens, types = [], []
        for i in range(size):
            if i in added:
                tokens.append(added[i]["content"])
                types.append(gguf.TokenType.CONTROL if added[i]["special"] else gguf.TokenType.USER_DEFINED)
            elif i in by_id:
                tokens.append(by_id[i])
                types.append(gguf.TokenType.NORMAL)
            else:
                tokens.append(f"[PAD{i}]")
                types.append(gguf.TokenType.UNUSED)
        merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
        path = os.path.join(OUT, f"tokenizer_{name}.gguf")
        w = gguf.GGUFWriter(path, arch="qwen3")
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    with open(os.path.join(OUT, "tokenizer_expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    tokenizer_ggufs()
    path = os.path.join(OUT, "reader.gguf")
    w = gguf.GGUFWriter(path, arch="qwen3")
    w.data_alignment = 64
    w.add_uint32("general.alignment", 64)
    w.add_string("general.name", "gattn reader fixture")
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.15625)
    w.add_bool("test.bool", True)
    w.add_uint64("test.u64_big", 2 ** 63 + 5)
    w.add_uint64("test.u64", 123456789012)
    w.add_int64("test.i64", -123456789012345)
    w.add_float64("test.f64", 2.718281828459045)
    w.add_array("test.strings", ["", "a", "Ġthe", "日本"])
    w.add_array("test.ints", [1, -2, 3])
    w.add_array("test.floats", [0.5, -1.25])

    rng = np.random.default_rng(1)
    values = {}
    rows, cols = 2, 256
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    for name, qtype in [("t.f32", gguf.GGMLQuantizationType.F32), ("t.f16", gguf.GGMLQuantizationType.F16),
                        ("t.bf16", gguf.GGMLQuantizationType.BF16), ("t.q8_0", gguf.GGMLQuantizationType.Q8_0),
                        ("t.q4_0", gguf.GGMLQuantizationType.Q4_0)]:
        data = gguf.quants.quantize(x, qtype)
        w.add_tensor(name, data, raw_dtype=qtype)
        values[name] = (qtype, data)
    for name, qtype, seed in [("t.q4_K", gguf.GGMLQuantizationType.Q4_K, 2),
                              ("t.q6_K", gguf.GGMLQuantizationType.Q6_K, 3)]:
        data = k_quant_blocks(qtype, rows, cols, seed)
        w.add_tensor(name, data, raw_dtype=qtype)
        values[name] = (qtype, data)
    vec = rng.standard_normal(cols).astype(np.float32)
    w.add_tensor("t.vector", vec)
    values["t.vector"] = (gguf.GGMLQuantizationType.F32, vec)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    r = gguf.GGUFReader(path)
    expected = {"metadata": {}, "tensors": []}
    for field in r.fields.values():
        if not field.name.startswith("test.") and field.name not in ("general.alignment", "general.name"):
            continue
        v = field.contents()
        if isinstance(v, float) or (isinstance(v, list) and v and isinstance(v[0], float)):
            v = [float(np.float32(f)) if field.types[-1] == gguf.GGUFValueType.FLOAT32 else f
                 for f in (v if isinstance(v, list) else [v])]
            v = v if isinstance(field.contents(), list) else v[0]
        expected["metadata"][field.name] = v
    for t in r.tensors:
        deq = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        expected["tensors"].append({
            "name": t.name, "type": int(t.tensor_type), "shape": [int(d) for d in t.shape],
            "offset": int(t.data_offset - r.data_offset), "bytes": int(t.n_bytes),
            "values": [float(v) for v in deq.reshape(-1)]})
    with open(os.path.join(OUT, "reader.json"), "w") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes) and reader.json")
    qwen3 = os.path.join(HERE, "..", "..", "tests", "fixtures", "hf", "qwen3_f32")
    for dtype in ("f32", "f16", "bf16"):
        out = os.path.join(OUT, f"qwen3_{dtype}.gguf")
        compare_llama_cpp.write_gguf(qwen3, out, dtype)
        print(f"wrote {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
