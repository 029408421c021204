#!/usr/bin/env python3
"""Times Hugging Face `tokenizers` for compare_speed.sh; prints one "median_s=<seconds>" line.

  hf_speed.py train DOCS_FOLDER VOCAB_SIZE RUNS            BpeTrainer, Qwen2 regex, no normaliser
  hf_speed.py encode TOKENIZER_JSON TEXTS_JSONL MODE RUNS  MODE: sequential | batch | batch_fast
Thread count: RAYON_NUM_THREADS (set by the caller). Only the library call is timed.
"""
import json
import statistics
import sys
import time
from pathlib import Path

from tokenizers import Tokenizer

from common import bpe_trainer, qwen2_style_tokenizer, read_documents


def timed(runs, work):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    what = sys.argv[1]
    if what == "train":
        texts = [d.decode("utf-8") for _, d in read_documents(Path(sys.argv[2]))]
        vocab, runs = int(sys.argv[3]), int(sys.argv[4])

        def train():
            tok = qwen2_style_tokenizer(nfc=False)
            tok.train_from_iterator(texts, trainer=bpe_trainer(vocab))
            assert tok.get_vocab_size() == vocab
        seconds = timed(runs, train)
    else:
        tok = Tokenizer.from_file(sys.argv[2])
        texts = [json.loads(line)["text"] for line in open(sys.argv[3], encoding="utf-8")]
        mode, runs = sys.argv[4], int(sys.argv[5])
        if mode == "sequential":
            seconds = timed(runs, lambda: [tok.encode(t).ids for t in texts])
        elif mode == "batch":
            seconds = timed(runs, lambda: [e.ids for e in tok.encode_batch(texts)])
        else:
            seconds = timed(runs, lambda: [e.ids for e in tok.encode_batch_fast(texts)])
    print(f"median_s={seconds:.6f}")


if __name__ == "__main__":
    main()
