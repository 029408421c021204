#!/usr/bin/env python3
"""Shows where gattn's ids for a text first differ from Hugging Face's, with the tokens around it.

  .venv/bin/python diff_ids.py --gattn build-tok/gattn TOKENIZER_JSON TEXT_FILE [--offset N --length N]
"""
import argparse
import subprocess
import sys

from tokenizers import Tokenizer


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tokenizer")
    p.add_argument("text")
    p.add_argument("--gattn", default="build-tok/gattn")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--length", type=int, default=None)
    p.add_argument("--context", type=int, default=8)
    a = p.parse_args()
    data = open(a.text, "rb").read()[a.offset:][:a.length]
    tok = Tokenizer.from_file(a.tokenizer)
    hf = tok.encode(data.decode("utf-8")).ids
    out = subprocess.run([a.gattn, "tokenizer", "encode", "--tokenizer", a.tokenizer], input=data,
                         capture_output=True, check=True).stdout.split()
    ours = [int(x) for x in out]
    i = 0
    while i < min(len(hf), len(ours)) and hf[i] == ours[i]:
        i += 1
    if i == len(hf) == len(ours):
        print(f"identical: {len(hf)} ids")
        return
    lo = max(0, i - a.context)
    show = lambda ids: [tok.id_to_token(x) for x in ids]
    print(f"first difference at id {i} (gattn {len(ours)} ids, HF {len(hf)})")
    print("before:", show(hf[lo:i]))
    print("HF:    ", show(hf[i:i + a.context]))
    print("gattn: ", show(ours[i:i + a.context]))
    print("text:  ", repr(tok.decode(hf[lo:i + a.context])))


if __name__ == "__main__":
    sys.exit(main())
