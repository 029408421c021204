"""The Python extension against the engine (run with PYTHONPATH=<build>/python and GATTN_BUILD
=<build>, the CMake build configured with -DGATTN_PYTHON=ON): a model made by the CLI, its logits
from Python equal bit for bit those gattn_infer_bits writes for the same rectangular forward pass
(2 sequences of 40), and bad input raises ValueError with the engine's message."""
import json
import os
import subprocess

import numpy as np
import pytest

import gattn

BUILD = os.environ.get("GATTN_BUILD", "build")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "g1"
    subprocess.run([os.path.join(BUILD, "gattn"), "init", "--config",
                    os.path.join(ROOT, "configs", "default.json"), "--seed", "3", "--out", str(out)],
                   check=True, capture_output=True)
    return str(out)


def infer_bits_ids(n, vocab, seed):
    # gattn_infer_bits' tokens(n, vocab, seed)
    return np.array([(i * 7 + seed * 13 + (i * i) % 11) % vocab for i in range(n)], dtype=np.int32)


def test_forward_equals_the_engine_bit_for_bit(model_dir, tmp_path):
    model = gattn.load(model_dir)
    with open(os.path.join(model_dir, "config.json")) as f:
        assert model.config == json.load(f)  # the config as its config.json has it
    vocab = model.config["vocab_size"]
    bits = tmp_path / "bits.f32"
    subprocess.run([os.path.join(BUILD, "gattn_infer_bits"), model_dir, "f32", str(bits)],
                   check=True, capture_output=True)
    want = np.fromfile(bits, dtype=np.float32)[: 80 * vocab].reshape(2, 40, vocab)
    got = model.forward(infer_bits_ids(80, vocab, 1).reshape(2, 40))
    assert got.shape == (2, 40, vocab) and got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    # one sequence given as [seq]: the batch's first row up to rounding (rows do not mix, but a
    # GEMM over 40 rows sums in another order than one over 80: the bits differ)
    one = model.forward(infer_bits_ids(80, vocab, 1)[:40])
    assert one.shape == (1, 40, vocab)
    np.testing.assert_allclose(one[0], want[0], rtol=0, atol=1e-5)


def test_bad_input_raises_value_error_with_the_engines_message(model_dir, tmp_path):
    model = gattn.load(model_dir)
    vocab = model.config["vocab_size"]
    with pytest.raises(ValueError, match=f"token id {vocab} at index 1 is outside the vocabulary"):
        model.forward(np.array([0, vocab], dtype=np.int32))
    with pytest.raises(ValueError, match="ids must have 1 or 2 dimensions"):
        model.forward(np.zeros((1, 2, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="ids are empty"):
        model.forward(np.zeros((0,), dtype=np.int32))
    with pytest.raises(ValueError, match="nowhere"):
        gattn.load(str(tmp_path / "nowhere"))
