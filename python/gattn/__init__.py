"""gattn from Python: load a model (gattn checkpoint, Hugging Face folder or GGUF file) and run it,
numpy in and out (docs/PYTHON.md).

    import gattn, numpy as np
    model = gattn.load("model_dir")  # a gattn checkpoint folder, a HF folder or a GGUF file
    logits = model.forward(np.array([[1, 2, 3]], dtype=np.int32))   # [batch, seq, vocab]

Bad input raises ValueError with the engine's message."""
from ._gattn import Model, load

__all__ = ["Model", "load"]
