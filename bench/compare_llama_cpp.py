"""gattn against llama.cpp (llama-cpp-python from PyPI, compiled from source on this machine) on
one Qwen3 model: a Hugging Face folder (e.g. bench/random_hf_checkpoint.py's) is loaded by gattn
as it is and written as GGUF (PyPI `gguf`'s writer; architecture qwen3) for llama.cpp, weights in
F32 or BF16. Prefill of PROMPT random token ids, then greedy decode of GENERATE tokens through
each engine's KV cache; rounds alternate between the engines, medians.

The GGUF's vocabulary is placeholder strings (token ids go in directly; no text is tokenized):
speed does not depend on it. Norm weights stay F32 in both dtypes, as llama.cpp's converter
writes them.

A Qwen3.5 hybrid folder (model_type qwen3_5 or qwen3_5_text, e.g. `gattn export --format
qwen3_5` of `gattn init --config configs/bench/qwen3_5_0.8b.json`) is written by llama.cpp's own
converter instead (architecture qwen35, Qwen3.5's tokenizer added to a linked copy of the folder):
give --llama-cpp, the built llama-cpp-python sdist (bench/llama_cpp_sdist.py), whose bindings are
then used too. tools/reference/check_llama_cpp_qwen35.py checks that conversion against
transformers.

usage: tools/reference/.venv-llama/bin/python bench/compare_llama_cpp.py --folder DIR | --gguf FILE
           [--dtype f32|bf16] [--prompt 512] [--generate 128] [--threads 1] [--rounds 3]
           [--llama-cpp SDIST_DIR]
       ... bench/compare_llama_cpp.py --check-fixture tests/fixtures/hf/qwen3_f32
The venv: python3 -m venv tools/reference/.venv-llama; its pip install gguf==0.19.0 numpy
llama-cpp-python==0.3.36 (compiles llama.cpp: 15-30 minutes on 2 cores; CMAKE_ARGS=
"-DGGML_NATIVE=ON").
"""
import argparse
import json
import os
import re
import statistics
import tempfile
import time

import numpy as np
from bench_decode import add_decode_args, run_gattn

import llama_cpp_sdist

# Hugging Face name (after "model.") -> GGUF name, per layer and whole-model.
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
MODEL_NAMES = {"model.embed_tokens.weight": "token_embd.weight",
               "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}


def read_safetensors(folder):
    """Every tensor of the folder's safetensors files as float32 numpy arrays."""
    tensors = {}
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("model") and name.endswith(".safetensors")):
            continue
        with open(os.path.join(folder, name), "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
            data = f.read()
        for key, info in header.items():
            if key == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            raw = np.frombuffer(data[begin:end], dtype={"F32": np.float32, "BF16": np.uint16,
                                                        "F16": np.float16}[info["dtype"]])
            if info["dtype"] == "BF16":
                raw = (raw.astype(np.uint32) << 16).view(np.float32)
            tensors[key] = raw.astype(np.float32).reshape(info["shape"])
    return tensors


def gguf_name(hf_name):
    if hf_name in MODEL_NAMES:
        return MODEL_NAMES[hf_name]
    m = re.match(r"model\.layers\.(\d+)\.(.+)$", hf_name)
    if not m or m.group(2) not in LAYER_NAMES:
        raise SystemExit(f"compare_llama_cpp: no GGUF name for tensor {hf_name}")
    return f"blk.{m.group(1)}.{LAYER_NAMES[m.group(2)]}"


def write_gguf(folder, path, dtype):
    import gguf  # PyPI's writer: Qwen3 only
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    w = gguf.GGUFWriter(path, "qwen3")
    w.add_context_length(c.get("max_position_embeddings", 4096))
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_key_length(c["head_dim"])
    w.add_value_length(c["head_dim"])
    w.add_rope_dimension_count(c["head_dim"])
    theta = c.get("rope_theta", c.get("rope_parameters", {}).get("rope_theta", 10000.0))
    w.add_rope_freq_base(float(theta))
    w.add_layer_norm_rms_eps(float(c.get("rms_norm_eps", 1e-6)))
    w.add_file_type({"bf16": gguf.LlamaFileType.MOSTLY_BF16, "f16": gguf.LlamaFileType.MOSTLY_F16}.get(
        dtype, gguf.LlamaFileType.ALL_F32))
    vocab = c["vocab_size"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(["a", "b", "ab"] + [f"<placeholder {i}>" for i in range(3, vocab)])
    w.add_token_types([gguf.TokenType.NORMAL] * vocab)
    w.add_token_merges(["a b"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    for name, value in read_safetensors(folder).items():
        if value.ndim >= 2 and dtype in ("bf16", "f16"):
            qtype = gguf.GGMLQuantizationType.BF16 if dtype == "bf16" else gguf.GGMLQuantizationType.F16
            w.add_tensor(gguf_name(name), gguf.quants.quantize(value, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(gguf_name(name), value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def is_qwen35(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f).get("model_type") in ("qwen3_5", "qwen3_5_text", "qwen3_5_moe_text")


def gguf_of(args, tmp):
    """The folder as a GGUF file in TMP: llama.cpp's converter for a Qwen3.5 hybrid (on a copy of
    the folder made of links, with Qwen3.5's tokenizer added), our Qwen3 writer otherwise."""
    path = os.path.join(tmp, "model.gguf")
    if not is_qwen35(args.folder):
        write_gguf(args.folder, path, args.dtype)
        return path
    if not args.llama_cpp:
        raise SystemExit("compare_llama_cpp: a qwen3_5 folder needs --llama-cpp (its converter)")
    linked = os.path.join(tmp, "hf")
    os.makedirs(linked)
    for name in os.listdir(args.folder):
        os.symlink(os.path.abspath(os.path.join(args.folder, name)), os.path.join(linked, name))
    if not os.path.exists(os.path.join(linked, "tokenizer.json")):
        llama_cpp_sdist.add_qwen_tokenizer(linked)
    return llama_cpp_sdist.convert(args.llama_cpp, linked, path, args.dtype)


def check_fixture(folder):
    """The GGUF conversion against transformers: a tests/fixtures/hf qwen3 folder written as GGUF
    and run by llama.cpp gives its reference.safetensors logits (relative L2 printed)."""
    import llama_cpp
    with open(os.path.join(folder, "reference.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        data = f.read()

    def tensor(name, dtype):
        begin, end = header[name]["data_offsets"]
        return np.frombuffer(data[begin:end], dtype).reshape(header[name]["shape"])

    ids, logits = tensor("input_ids", np.int64)[0], tensor("logits", np.float32)
    with tempfile.TemporaryDirectory(prefix="gattn_llama_") as tmp:
        path = os.path.join(tmp, "model.gguf")
        write_gguf(folder, path, "f32")
        llm = llama_cpp.Llama(model_path=path, n_ctx=64, logits_all=True, verbose=False,
                              n_threads=1)
        llm.eval([int(x) for x in ids])
        ours = np.array(llm.scores[:len(ids)])
    error = np.linalg.norm(ours - logits) / np.linalg.norm(logits)
    print(f"{folder}: llama.cpp logits vs transformers' relative L2 {error:.3g}")


def last_logits(llm):
    """The logits of the last token evaluated (llama.cpp's own buffer, not a copy)."""
    import llama_cpp
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))


def time_llama(llm, ids, generate):
    llm.reset()
    start = time.perf_counter()
    llm.eval(ids)
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(generate):
        token = int(np.argmax(last_logits(llm)))
        llm.eval([token])
    decode = time.perf_counter() - start
    return len(ids) / prefill, generate / decode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder", help="a Hugging Face qwen3 folder")
    p.add_argument("--gguf", help="a GGUF file (e.g. bench/quantized_ggufs.py's) both engines run "
                   "as it is: gattn reads its matrices as stored (DTYPE bf16)")
    p.add_argument("--check-fixture", help="only compare llama.cpp's logits on this "
                   "tests/fixtures/hf qwen3 folder with its transformers reference")
    p.add_argument("--llama-cpp", help="a built llama-cpp-python sdist: its bindings and converter")
    add_decode_args(p)
    args = p.parse_args()
    if args.llama_cpp:  # before any `import llama_cpp`: the sdist's module on its own library
        llama_cpp_sdist.bindings(args.llama_cpp)
    if args.check_fixture:
        return check_fixture(args.check_fixture)
    if not args.folder and not args.gguf:
        p.error("--folder or --gguf is required")
    if args.gguf:
        args.dtype = "bf16"  # gattn_bench_decode's DTYPE for a GGUF file read as stored
    import llama_cpp  # after argparse: its import is slow

    model = args.gguf or args.folder
    with tempfile.TemporaryDirectory(prefix="gattn_llama_", dir=os.path.dirname(os.path.abspath(model))) as tmp:
        path = args.gguf or gguf_of(args, tmp)
        llm = llama_cpp.Llama(model_path=path, n_ctx=args.prompt + args.generate + 16,
                              n_batch=args.prompt, n_ubatch=args.prompt, n_threads=args.threads,
                              n_threads_batch=args.threads, verbose=False)
        vocab = llm.n_vocab()
        ids = [int(x) for x in np.random.default_rng(1).integers(0, vocab, args.prompt)]
        results = {"gattn": [], "llama.cpp": []}
        for r in range(args.rounds):
            order = ["gattn", "llama.cpp"] if r % 2 == 0 else ["llama.cpp", "gattn"]
            for who in order:
                if who == "gattn":
                    run = run_gattn(args, model)
                    result = (run["prefill"], run["decode"])
                else:
                    result = time_llama(llm, ids, args.generate)
                results[who].append(result)
                print(f"round {r} {who:10s} prefill {result[0]:7.1f} tok/s  decode "
                      f"{result[1]:6.2f} tok/s", flush=True)
    med = {who: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for who, v in results.items()}
    what = os.path.basename(args.gguf) if args.gguf else args.dtype
    print(f"\nmedians over {args.rounds} alternated rounds, {args.threads} thread(s), {what}, "
          f"pp{args.prompt} / tg{args.generate}, llama-cpp-python {llama_cpp.__version__}")
    print("| engine | prefill tok/s | decode tok/s |\n|---|---|---|")
    for who, (prefill, decode) in med.items():
        print(f"| {who} | {prefill:.1f} | {decode:.2f} |")
    g, l = med["gattn"], med["llama.cpp"]
    print(f"gattn / llama.cpp: prefill {g[0] / l[0]:.2f}x, decode {g[1] / l[1]:.2f}x")


if __name__ == "__main__":
    main()
