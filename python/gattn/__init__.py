"""gattn from Python: load a model (gattn checkpoint or run folder, Hugging Face folder or GGUF
file), run it numpy in and out, and generate text (docs/PYTHON.md).

    import gattn, numpy as np
    model = gattn.load("model_dir")  # a gattn checkpoint or run folder, a HF folder or a GGUF file
    logits = model.forward(np.array([[1, 2, 3]], dtype=np.int32))   # [batch, seq, vocab]
    for piece in model.generate("In the beginning", max_tokens=20, temperature=0):
        print(piece, end="", flush=True)

Bad input raises ValueError with the engine's message."""
from . import analysis
from ._gattn import (SITES, Model, TextIterator, Tokenizer, load, read_tokens, set_threads,
                     threads, train)

__all__ = ["analysis", "SITES", "Model", "TextIterator", "Tokenizer", "load", "read_tokens", "set_threads",
           "threads", "train"]
