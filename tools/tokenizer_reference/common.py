"""Shared by the tokenizer reference scripts: paths, the Qwen2 regex, the sample's documents and
chunks, FNV-1a hashes, and how Hugging Face `tokenizers` is set up to match gattn."""
import subprocess
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "tokenizer"
MANIFEST = FIXTURES / "sample_manifest.tsv"
ASSEMBLE = ROOT / "tests" / "tokenizer" / "assemble_sample.sh"

QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
                 r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
END_OF_TEXT = "<|endoftext|>"
CHUNK_BYTES = 16384  # chunks end at a line end; a longer line is a chunk of its own


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def ids_hash(ids) -> str:
    """FNV-1a 64 of the ids as little-endian uint32, as hex (the C++ tests compute the same)."""
    return "%016x" % fnv1a64(b"".join(int(i).to_bytes(4, "little") for i in ids))


def assemble_sample(out_dir: Path) -> Path:
    """Runs the same assembly script the tests run; returns the documents folder."""
    subprocess.run(["bash", str(ASSEMBLE), str(out_dir)], check=True)
    return out_dir / "documents"


def read_documents(folder: Path):
    """(name, bytes) in the order gattn's for_each_document reads a folder (sorted paths)."""
    return [(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()]


def chunks_of(data: bytes):
    """(offset, length) of line-aligned chunks of at most CHUNK_BYTES (unless one line is longer)."""
    out, start, pos = [], 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end + 1
        if end - start > CHUNK_BYTES and pos > start:
            out.append((start, pos - start))
            start = pos
        pos = end
    if start < len(data):
        out.append((start, len(data) - start))
    return out


def qwen2_style_tokenizer(nfc: bool) -> Tokenizer:
    """An empty byte-level BPE set up as Qwen2's (NFC optional), ready for BpeTrainer."""
    tok = Tokenizer(models.BPE())
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def bpe_trainer(vocab_size: int) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[END_OF_TEXT],
                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                               show_progress=False)


def merges_of(tokenizer_json: dict):
    """The merges of a tokenizer.json as (left, right) tuples, whichever form the file uses."""
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in
            tokenizer_json["model"]["merges"]]
