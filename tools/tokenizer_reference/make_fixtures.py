#!/usr/bin/env python3
"""Writes the tokenizer fixtures in tests/fixtures/tokenizer/ with Hugging Face `tokenizers`.

  --select     choose the sample's source files anew (rewrites sample_manifest.tsv)
  (always)     assemble the sample with tests/tokenizer/assemble_sample.sh; train gattn_trained.json
               with the gattn binary; train hf_trained.json with HF's BpeTrainer (NFC + Qwen2 regex);
               encode every chunk of the sample with HF for both and write expected.json; compare
               gattn's merges with HF's BpeTrainer's on the same data (no normaliser).
"""
import argparse
import bz2
import gzip
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from common import (FIXTURES, MANIFEST, QWEN2_PATTERN, ROOT, assemble_sample, bpe_trainer, chunks_of, fnv1a64,
                    ids_hash, merges_of, qwen2_style_tokenizer, read_documents)

VOCAB_SIZE = 8192
GPT2_VOCAB_SIZE = 4096
TOKENIZERS = ("gattn_trained.json", "hf_trained.json", "hf_gpt2_style.json")
FULL_IDS_BYTES = 2048  # the first line-aligned stretch of each document is also stored id by id

# document, Debian package, source (a folder the package fills, or one file), most bytes to take
SOURCES = [
    ("01_en", "manpages", "/usr/share/man/man", 400_000),
    ("02_ja", "manpages-ja", "/usr/share/man/ja/", 800_000),
    ("03_zh_CN", "manpages-zh", "/usr/share/man/zh_CN/", 500_000),
    ("04_zh_TW", "manpages-zh", "/usr/share/man/zh_TW/", 300_000),
    ("05_ru", "manpages-ru", "/usr/share/man/ru/", 600_000),
    ("06_uk", "manpages-uk", "/usr/share/man/uk/", 300_000),
    ("07_el", "manpages-el", "/usr/share/man/el/", 300_000),
    ("08_pl", "manpages-pl", "/usr/share/man/pl/", 200_000),
    ("09_fr", "manpages-fr", "/usr/share/man/fr/", 200_000),
    ("10_de", "manpages-de", "/usr/share/man/de/", 200_000),
    ("11_es", "manpages-es", "/usr/share/man/es/", 200_000),
    ("12_ar", "hunspell-ar", "/usr/share/hunspell/ar.dic", 600_000),
    ("13_normalization", "unicode-data", "/usr/share/unicode/NormalizationTest.txt.bz2", None),
    ("14_emoji", "unicode-data", "/usr/share/unicode/emoji/emoji-test.txt", None),
    ("15_edge_cases", "-", "tests/fixtures/tokenizer/edge_cases.txt", None),
]


def decompressed(path: str) -> bytes:
    if path.endswith(".gz"):
        return gzip.open(path).read()
    if path.endswith(".bz2"):
        return bz2.open(path).read()
    return Path(path).read_bytes()


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def select_sources():
    """Manifest rows: whole package files in sorted order while they fit the cap (files that are
    not UTF-8 are skipped: HF takes only str); a single big file is cut at a line count."""
    rows = []
    for document, package, source, cap in SOURCES:
        if package == "-" or not source.endswith("/") and not source.endswith("/man"):
            take = "all"
            if cap is not None:
                data, total, lines = decompressed(source), 0, 0
                for line in data.splitlines(keepends=True):
                    if total + len(line) > cap:
                        break
                    total += len(line)
                    lines += 1
                take = f"lines={lines}"
            rows.append((document, package, source, take))
            continue
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True,
                                check=True).stdout.split("\n")
        files = sorted(f for f in listed if f.startswith(source) and f.endswith(".gz")
                       and Path(f).is_file() and not Path(f).is_symlink())
        total, skipped = 0, 0
        for f in files:
            data = decompressed(f)
            if not is_utf8(data):
                skipped += 1
                continue
            if total + len(data) > cap:
                continue
            rows.append((document, package, f, "all"))
            total += len(data)
        print(f"select: {document}: {total} bytes from {package}"
              f" ({skipped} non-UTF-8 files skipped)", file=sys.stderr)
    header = ("# The tokenizer test sample: tests/tokenizer/assemble_sample.sh concatenates the sources\n"
              "# of each document in this order. Written by tools/tokenizer_reference/make_fixtures.py"
              " --select.\n# document\tpackage\tpath\ttake (all | lines=N)\n")
    MANIFEST.write_text(header + "".join("\t".join(r) + "\n" for r in rows))


def hf_ids(tokenizer: Tokenizer, texts):
    return [e.ids for e in tokenizer.encode_batch(texts)]


def encode_expectations(tokenizer: Tokenizer, documents, chunks, full_spans):
    texts = [documents[d][1][o:o + n].decode("utf-8") for d, o, n in chunks]
    ids = hf_ids(tokenizer, texts)
    full = [{"document": d, "offset": o, "length": n, "ids": tokenizer.encode(
        documents[d][1][o:o + n].decode("utf-8")).ids} for d, o, n in full_spans]
    return {"chunk_ids": [[len(x), ids_hash(x)] for x in ids],
            "total_ids": sum(len(x) for x in ids), "full": full}


def byte_level_decoder_table():
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[chr(b)] = b
        else:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def single_token_expectations(tokenizer: Tokenizer):
    """Every token's bytes (added tokens: their text) when they are UTF-8, checked against HF's
    decode and hashed; tokens that are not whole UTF-8 are counted (HF's decode is lossy there)."""
    table = byte_level_decoder_table()
    added = {t.content for t in tokenizer.get_added_tokens_decoder().values()}
    stream, utf8_tokens, partial = bytearray(), 0, 0
    vocab = tokenizer.get_vocab()
    for token, i in sorted(vocab.items(), key=lambda kv: kv[1]):
        data = token.encode() if token in added else bytes(table[c] for c in token)
        if not is_utf8(data):
            partial += 1
            continue
        assert tokenizer.decode([i], skip_special_tokens=False) == data.decode(), (i, token)
        stream += i.to_bytes(4, "little") + len(data).to_bytes(4, "little") + data
        utf8_tokens += 1
    return {"utf8_tokens": utf8_tokens, "other_tokens": partial,
            "fnv1a64": "%016x" % fnv1a64(bytes(stream))}


def byte_level_string(data: bytes) -> str:
    inverse = {b: c for c, b in byte_level_decoder_table().items()}
    return "".join(inverse[b] for b in data)


def tiny_tokenizer(merges, added, nfc, ignore_merges, extra_tokens=()):
    """A small tokenizer.json: the 256 byte tokens (ids in byte order), the merges' results (merges
    are pairs of UTF-8 byte strings), extra tokens, then added tokens [(content, special, normalized)]
    after the model's tokens."""
    vocab = {byte_level_string(bytes([b])): b for b in range(256)}
    for token in [a + b for a, b in merges] + [t.encode() for t in extra_tokens]:
        vocab.setdefault(byte_level_string(token), len(vocab))
    added_tokens = [{"id": len(vocab) + i, "content": c, "single_word": False, "lstrip": False,
                     "rstrip": False, "normalized": n, "special": s} for i, (c, s, n) in enumerate(added)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"} if nfc else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False,
                                                       "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab,
                  "merges": [[byte_level_string(a), byte_level_string(b)] for a, b in merges]},
    }


# Merge order, repeated pairs, two pairs making one token, added tokens (leftmost-longest, raw vs
# normalised), NFC, ignore_merges: small tokenizers and texts whose ids HF decides.
TINY_MERGES = [(b"b", b"c"), (b"a", b"b"), (b"a", b"a"), (b"ab", b"c"), (b"a", b"bc"), (b"aa", b"aa"),
               (b"\xc3", b"\xa9"), (b"\xc3\xa9", b"a"), (b" ", b"a"), (b"c", b"a"), (b"ca", b"b"),
               (b"b", b"c")]
TINY_ADDED = [("<|endoftext|>", True, False), ("<x>", False, False), ("<x><y>", False, False),
              ("éa", False, True), ("bcd", False, False)]
TINY_TEXTS = ["abc", "aaa", "aaaa", "aaaaa", "abcabc", "cab", "cabc", "xabcd", "e\u0301a", "\u00e9a",
              "e\u0301", "<|endoftext|><x>", "<|endoftext|", "<<x>>", "<x><y><x>", "a<|endoftext|>b",
              "abcd", " a a  a", "ab\u00e9a\u00e9a", "A\u030a\u0301 \u212b"]


def tiny_fixtures():
    out = {}
    for name, nfc, ignore in (("tiny_nfc.json", True, False), ("tiny_ignore_merges.json", False, True)):
        spec = tiny_tokenizer(TINY_MERGES, TINY_ADDED, nfc, ignore, extra_tokens=["aaa", "cabc"])
        (FIXTURES / name).write_text(json.dumps(spec, ensure_ascii=False, indent=1) + "\n")
        tok = Tokenizer.from_file(str(FIXTURES / name))
        out[name] = [{"text": t, "ids": tok.encode(t).ids} for t in TINY_TEXTS]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--select", action="store_true", help="choose the sample's files anew")
    parser.add_argument("--gattn", default=None, help="the gattn binary (default: build-tok/gattn, build/gattn)")
    args = parser.parse_args()
    gattn = args.gattn or next((str(p) for p in (ROOT / "build-tok/gattn", ROOT / "build/gattn")
                                if p.exists()), None)
    if gattn is None:
        sys.exit("make_fixtures: no gattn binary; build it or pass --gattn")
    if args.select:
        select_sources()

    with tempfile.TemporaryDirectory() as tmp:
        folder = assemble_sample(Path(tmp) / "sample")
        documents = read_documents(folder)
        packages = dict(line.split(" ", 1) for line in
                        (folder.parent / "packages.txt").read_text().splitlines())
        for name, data in documents:
            if not is_utf8(data):
                sys.exit(f"make_fixtures: {name} is not UTF-8; HF cannot take it")
        texts = [data.decode("utf-8") for _, data in documents]
        total = sum(len(d) for _, d in documents)
        print(f"sample: {len(documents)} documents, {total} bytes", file=sys.stderr)

        t0 = time.time()
        subprocess.run([gattn, "tokenizer", "train", "--input", str(folder), "--vocab-size",
                        str(VOCAB_SIZE), "--out", str(FIXTURES / "gattn_trained.json")], check=True,
                       stdout=sys.stderr)
        print(f"gattn trained in {time.time() - t0:.1f} s", file=sys.stderr)

        hf = qwen2_style_tokenizer(nfc=True)
        t0 = time.time()
        hf.train_from_iterator(texts, trainer=bpe_trainer(VOCAB_SIZE))
        print(f"HF trained (NFC) in {time.time() - t0:.1f} s", file=sys.stderr)
        hf.save(str(FIXTURES / "hf_trained.json"), pretty=False)

        # Does gattn's trainer make HF's merges? HF trains on the same documents, no normaliser.
        plain = qwen2_style_tokenizer(nfc=False)
        plain.train_from_iterator(texts, trainer=bpe_trainer(VOCAB_SIZE))
        hf_merges = merges_of(json.loads(plain.to_str()))
        gattn_json = json.loads((FIXTURES / "gattn_trained.json").read_text())
        gattn_merges = merges_of(gattn_json)
        same = 0
        while same < min(len(hf_merges), len(gattn_merges)) and hf_merges[same] == gattn_merges[same]:
            same += 1
        merges_text = "".join(f"{a} {b}\n" for a, b in hf_merges).encode()
        trainer_comparison = {
            "vocab_size": VOCAB_SIZE, "hf_merges": len(hf_merges), "gattn_merges": len(gattn_merges),
            "identical_leading_merges": same,
            "hf_vocab_equals_gattn": json.loads(plain.to_str())["model"]["vocab"] == gattn_json["model"]["vocab"],
            "hf_merges_fnv1a64": "%016x" % fnv1a64(merges_text),
        }
        print(f"trainer comparison: {trainer_comparison}", file=sys.stderr)

        chunks = [(d, o, n) for d, (_, data) in enumerate(documents) for o, n in chunks_of(data)]
        full_spans = []
        for d, (name, data) in enumerate(documents):
            if "edge_cases" in name:
                full_spans.append((d, 0, len(data)))
                continue
            end = 0
            while True:
                nl = data.find(b"\n", end)
                if nl < 0 or nl + 1 > FULL_IDS_BYTES:
                    break
                end = nl + 1
            full_spans.append((d, 0, end))

        expected = {
            "generator": {"tokenizers": tokenizers.__version__, "python": platform.python_version(),
                          "script": "tools/tokenizer_reference/make_fixtures.py"},
            "packages": packages,
            "documents": [{"name": name, "bytes": len(data), "fnv1a64": "%016x" % fnv1a64(data)}
                          for name, data in documents],
            "chunks": chunks,
            "tokenizers": {},
            "hf_bpe_trainer_vs_gattn": trainer_comparison,
            "tiny": tiny_fixtures(),
        }
        # GPT-2's set-up: ByteLevel's own regex (use_regex), no Split; merges in the older
        # "left right" string form, which HF still reads.
        gpt2 = Tokenizer(models.BPE())
        gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        gpt2.decoder = decoders.ByteLevel()
        gpt2.train_from_iterator(texts, trainer=bpe_trainer(GPT2_VOCAB_SIZE))
        gpt2_json = json.loads(gpt2.to_str())
        gpt2_json["model"]["merges"] = [" ".join(m) for m in merges_of(gpt2_json)]
        (FIXTURES / "hf_gpt2_style.json").write_text(json.dumps(gpt2_json, ensure_ascii=False) + "\n")

        for file in TOKENIZERS:
            tok = Tokenizer.from_file(str(FIXTURES / file))
            t0 = time.time()
            entry = encode_expectations(tok, documents, chunks, full_spans)
            entry["single_tokens"] = single_token_expectations(tok)
            entry["vocab_size"] = tok.get_vocab_size()
            expected["tokenizers"][file] = entry
            print(f"{file}: {entry['total_ids']} ids over {len(chunks)} chunks in "
                  f"{time.time() - t0:.1f} s", file=sys.stderr)
        (FIXTURES / "expected.json").write_text(json.dumps(expected, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
