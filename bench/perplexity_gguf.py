#!/usr/bin/env python3
"""Perplexity of GGUF files over a whole token shard from gattn and from llama.cpp, on the same
tokens: consecutive plain windows of --seq tokens (window w: inputs w*T .. w*T+T-1, each
predicting the next token; no BOS), every target of every whole window counted. gattn's figure is
`gattn eval --window plain --json`'s (full precision); llama.cpp's is the mean negative log-likelihood of its own logits
(llama-cpp-python 0.3.36's bindings, every position's logits, log-sum-exp in float64 here). The
issue 34 target: gattn's perplexity within 0.5% of llama.cpp's for every file.

usage: tools/reference/.venv/bin/python bench/perplexity_gguf.py --data SHARD --llama-cpp SDIST
           [--seq 512] [--threads 1] [--windows 0] [--json OUT] FILE.gguf...
(from bench/; LLAMA_CPP_LIB_PATH picks the libllama build, as bench/llama_cpp_sdist.py says)"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np

import llama_cpp_sdist

GATTN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "gattn")


def read_shard(path):
    """The token ids of a gattn token shard (io/token_shard.h: magic, version, bytes per token,
    count, then the ids)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:8] != b"GATTNTOK":
            sys.exit(f"{path}: not a gattn token shard")
        _, token_bytes = struct.unpack_from("<II", head, 8)
        count = struct.unpack_from("<Q", head, 16)[0]
        ids = np.frombuffer(f.read(count * token_bytes), dtype=np.uint16 if token_bytes == 2 else np.uint32)
    if len(ids) != count:
        sys.exit(f"{path}: {count} tokens announced, {len(ids)} read")
    return ids.astype(np.int64)


def gattn_eval(gattn, gguf, data, seq, windows, threads):
    out = subprocess.run([gattn, "eval", "--checkpoint", gguf, "--data", data, "--seq", str(seq),
                          "--window", "plain", "--windows", str(windows), "--threads", str(threads),
                          "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"gattn eval {gguf} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout)
    return result["loss"], result["target_tokens"]


def llama_eval(llama_cpp, gguf, ids, seq, windows, threads):
    llm = llama_cpp.Llama(model_path=gguf, n_ctx=seq, n_batch=seq, n_ubatch=seq, logits_all=True,
                          verbose=False, n_threads=threads, n_threads_batch=threads)
    nats = 0.0
    for w in range(windows):
        x, y = ids[w * seq:(w + 1) * seq], ids[w * seq + 1:(w + 1) * seq + 1]
        llm.reset()
        llm.eval([int(t) for t in x])
        logits = np.array(llm.scores[:seq], dtype=np.float64)
        top = logits.max(axis=1)
        lse = np.log(np.exp(logits - top[:, None]).sum(axis=1)) + top
        nats += float((lse - logits[np.arange(seq), y]).sum())
    return nats / (windows * seq), windows * seq


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--data", required=True)
    p.add_argument("--llama-cpp", required=True, help="a built llama-cpp-python 0.3.36 sdist")
    p.add_argument("--gattn", default=GATTN)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--windows", type=int, default=0, help="0: every whole window")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json")
    a = p.parse_args()
    ids = read_shard(a.data)
    windows = (len(ids) - 1) // a.seq
    if a.windows:
        windows = min(windows, a.windows)
    llama_cpp = llama_cpp_sdist.bindings(a.llama_cpp)
    rows = []
    print("| file | targets | gattn loss | gattn ppl | llama.cpp loss | llama.cpp ppl | ppl gattn/llama.cpp - 1 |")
    print("|---|---|---|---|---|---|---|")
    for gguf in a.files:
        g_loss, g_targets = gattn_eval(a.gattn, gguf, a.data, a.seq, windows, a.threads)
        l_loss, l_targets = llama_eval(llama_cpp, gguf, ids, a.seq, windows, a.threads)
        if g_targets != l_targets:
            sys.exit(f"{gguf}: gattn counted {g_targets} targets, llama.cpp {l_targets}")
        row = {"file": gguf, "bytes": os.path.getsize(gguf), "targets": g_targets,
               "gattn_loss": g_loss, "gattn_perplexity": math.exp(g_loss),
               "llama_cpp_loss": l_loss, "llama_cpp_perplexity": math.exp(l_loss),
               "relative": math.exp(g_loss - l_loss) - 1}
        rows.append(row)
        print(f"| {os.path.basename(gguf)} | {g_targets} | {g_loss:.4f} | {row['gattn_perplexity']:.3f} | "
              f"{l_loss:.4f} | {row['llama_cpp_perplexity']:.3f} | {100 * row['relative']:+.3f}% |",
              flush=True)
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"data": a.data, "seq": a.seq, "windows": windows, "threads": a.threads,
                       "files": rows}, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
