"""The Python extension against the engine (run with PYTHONPATH=<build>/python and GATTN_BUILD
=<build>, the CMake build configured with -DGATTN_PYTHON=ON): a model made by the CLI, its logits
from Python equal bit for bit those gattn_infer_bits writes for the same rectangular forward pass
(2 sequences of 40), and bad input raises ValueError with the engine's message."""
import json
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import gattn

BUILD = os.environ.get("GATTN_BUILD", "build")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "gattn_trained.json")


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
    with pytest.raises(ValueError,
                       match=f"token id {vocab} at position 1 is outside the vocabulary"):
        model.forward(np.array([0, vocab], dtype=np.int32))
    with pytest.raises(ValueError, match="ids must have 1 or 2 dimensions"):
        model.forward(np.zeros((1, 2, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="ids are empty"):
        model.forward(np.zeros((0,), dtype=np.int32))
    with pytest.raises(ValueError, match="nowhere"):
        gattn.load(str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="no tokenizer.json in the checkpoint folder"):
        model.tokenizer
    with pytest.raises(ValueError, match="weights dtype 'q5'"):
        gattn.load(model_dir, dtype="q5")
    with pytest.raises(ValueError, match="top_p"):
        gattn.load(model_dir, tokenizer=TOKENIZER).generate("x", top_p=2.0)
    with pytest.raises(ValueError, match="exceeds the model's context"):
        gattn.load(model_dir, tokenizer=TOKENIZER).generate("x", max_tokens=10**6)


PROMPT = "And God said, Let there be light: and there was light. And God saw the light"


def cli_generate(model, max_tokens):
    out = subprocess.run([os.path.join(BUILD, "gattn"), "generate", "--checkpoint", model,
                          "--tokenizer", TOKENIZER, "--prompt", PROMPT, "--max-tokens",
                          str(max_tokens), "--temperature", "0"], check=True, capture_output=True)
    return out.stdout[:-1]  # the CLI ends with a newline


@pytest.fixture(scope="module")
def wide_model(tmp_path_factory):
    # configs/default.json with the fixture tokenizer's 8192 ids, in a run folder's layout
    run = tmp_path_factory.mktemp("run")
    with open(os.path.join(ROOT, "configs", "default.json")) as f:
        config = dict(json.load(f), vocab_size=8192)
    (run / "config.json").write_text(json.dumps(config))
    subprocess.run([os.path.join(BUILD, "gattn"), "init", "--config", str(run / "config.json"),
                    "--seed", "5", "--out", str(run / "checkpoints" / "step_00000007")],
                   check=True, capture_output=True)
    return str(run)


def test_generate_equals_the_clis_greedy_text(wide_model):
    model = gattn.load(wide_model, tokenizer=TOKENIZER)  # a run folder: its newest checkpoint
    assert model.path.endswith("step_00000007")
    it = model.generate(PROMPT, max_tokens=40, temperature=0)
    pieces = list(it)
    want = cli_generate(wide_model, 40)
    assert it.text_bytes == want and "".join(pieces) == want.decode("utf-8", "replace")
    assert it.finish_reason == "length" and len(it.tokens) == 40 and len(pieces) > 1
    ids = model.tokenizer.encode(PROMPT)  # the same prompt as ids
    assert list(model.generate(ids, max_tokens=40, temperature=0)) == pieces
    assert model.tokenizer.decode(ids) == PROMPT


def test_ctrl_c_stops_generate_between_tokens_and_the_model_goes_on(wide_model):
    model = gattn.load(wide_model, tokenizer=TOKENIZER)
    it = model.generate(PROMPT, max_tokens=900, temperature=0)
    timer = threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in it:
            pass
    timer.join()
    assert it.finish_reason == "" and len(it.tokens) < 900  # stopped inside the engine's loop
    it = model.generate(PROMPT, max_tokens=40, temperature=0)
    list(it)
    assert it.text_bytes == cli_generate(wide_model, 40)


IDS = np.array([[(i * 37 + 11 * b) % 8192 for i in range(12)] for b in range(2)], dtype=np.int32)


def test_attention_probabilities_equal_a_numpy_recomputation_from_captured_q_and_k(wide_model):
    model = gattn.load(wide_model)
    c = model.config
    heads, kv, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    pairs = [(1, h) for h in range(heads)]
    logits, got = model.forward(IDS, capture=["attention_q", "attention_k"], attention=pairs)
    assert np.array_equal(logits, model.forward(IDS))  # capturing changes nothing
    q = got["attention_q"][1].reshape(2, 12, heads, d)
    k = got["attention_k"][1].reshape(2, 12, kv, d)
    causal = np.tril(np.ones((12, 12), dtype=bool))
    for layer, h in pairs:
        s = np.einsum("bid,bjd->bij", q[:, :, h].astype(np.float64),
                      k[:, :, h // (heads // kv)].astype(np.float64)) / np.sqrt(d)
        s = np.where(causal, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        assert got["attention"][(layer, h)].shape == (2, 12, 12)
        np.testing.assert_allclose(got["attention"][(layer, h)], p, rtol=0, atol=2e-6)


def test_hooks_see_and_change_the_pass(wide_model):
    model = gattn.load(wide_model)
    base = model.forward(IDS)
    seen = []
    assert np.array_equal(model.forward(IDS, hooks={"layer_output": lambda l, a: seen.append(
        (l, a.shape))}), base)
    assert seen == [(l, (2, 12, 192)) for l in range(4)]

    def close_layer_2(layer, gated):  # the gate's output, as attention's heads leave it
        if layer == 2:
            gated[...] = 0
    hooked = model.forward(IDS, hooks={"gate_output": close_layer_2})
    # the CLI's --intervene grammar, through the engine's own intervention hooks
    assert np.array_equal(hooked, model.forward(IDS, interventions="layer:2:gate=closed"))
    assert not np.array_equal(hooked, base)
    d = model.config["head_dim"]

    def close_head_1(layer, gated):
        gated[:, :, d:2 * d] = 0
    _, got = model.forward(IDS, hooks={"gate_output": close_head_1}, capture=["gate_output"])
    assert not got["gate_output"][0][:, :, d:2 * d].any() and got["gate_output"][0][:, :, :d].any()


def test_capture_and_hook_errors(wide_model):
    model = gattn.load(wide_model)
    base = model.forward(IDS)
    with pytest.raises(ValueError, match="the capture takes 73728 bytes, above max_capture_bytes 1000"):
        model.forward(IDS, capture=["layer_output"], max_capture_bytes=1000)
    with pytest.raises(ValueError, match="attention probabilities of 1 heads take 1152 bytes"):
        model.forward(IDS, attention=[(0, 0)], max_capture_bytes=1000)
    with pytest.raises(ValueError, match="unknown site 'nope': the sites are attention_q"):
        model.forward(IDS, capture=["nope"])
    with pytest.raises(ValueError, match="head 3 is outside the model's 3"):
        model.forward(IDS, attention=[(0, 3)])
    with pytest.raises(ValueError, match="read-only"):  # not read on by the model: no writes
        model.forward(IDS, hooks={"mixer_input": lambda l, a: a.fill(0)})

    def fails(layer, a):
        raise RuntimeError("hook failed")
    with pytest.raises(RuntimeError, match="hook failed"):
        model.forward(IDS, hooks={"gate_output": fails})
    assert np.array_equal(model.forward(IDS), base)  # the model is unchanged


def test_hooks_change_the_residual_stream_and_the_mlp_output(wide_model):
    model = gattn.load(os.path.join(wide_model, "checkpoints", "step_00000007"))
    base = model.forward(IDS)

    def zero_layer_1(layer, a):
        if layer == 1:
            a[...] = 0
    # the MLP's output zeroed by a hook equals layer 1's down_proj zeroed in the weights
    hooked = model.forward(IDS, hooks={"mlp_output": zero_layer_1})
    assert not np.array_equal(hooked, base)
    down = model.parameters(writable=True)["model.layers.1.mlp.down_proj.weight"]
    kept = down.copy()
    down[...] = 0
    try:
        assert np.array_equal(model.forward(IDS), hooked)
    finally:
        down[...] = kept
    # the last layer's output zeroed: the final norm reads zeros, so every logit is 0
    last = model.config["num_hidden_layers"] - 1
    zeroed = model.forward(IDS, hooks={"layer_output": lambda l, a: a.fill(0) if l == last
                                       else None})
    assert not zeroed.any() and np.array_equal(model.forward(IDS), base)


def test_interventions_as_a_dict_equal_the_clis_grammar(wide_model):
    model = gattn.load(wide_model)
    both = model.forward(IDS, interventions=["layer:2:gate=closed", "layer:1:gate=constant:0.25",
                                             "value@first=zero"])
    assert np.array_equal(model.forward(IDS, interventions={
        "layer:2:gate": "closed", "layer:1:gate": 0.25, "value@first": "zero"}), both)
    assert not np.array_equal(both, model.forward(IDS))
    with pytest.raises(ValueError, match="the action of 'gate' must be a string or a number"):
        model.forward(IDS, interventions={"gate": None})


@pytest.fixture(scope="module")
def hybrid_model(tmp_path_factory):
    # a Gated DeltaNet layer and a full-attention layer (vocabulary 65)
    out = tmp_path_factory.mktemp("hybrid") / "model"
    subprocess.run([os.path.join(BUILD, "gattn"), "init", "--config",
                    os.path.join(ROOT, "tests", "cli", "tiny_hybrid_65.json"), "--seed", "5",
                    "--out", str(out)], check=True, capture_output=True)
    return str(out)


def delta_rule_final_state(k, v, g, beta):
    """The gated delta rule's state after the last token (float64), one sequence and value head:
    S <- exp(g) S; S <- S + k (beta (v - S^T k))^T."""
    state = np.zeros((k.shape[1], v.shape[1]))
    for t in range(len(k)):
        state *= np.exp(g[t])
        state += np.outer(k[t], beta[t] * (v[t] - state.T @ k[t]))
    return state


def test_delta_net_state_equals_a_numpy_delta_rule_from_captured_inputs(hybrid_model):
    model = gattn.load(hybrid_model)
    c = model.config
    kh, vh = c["linear_num_key_heads"], c["linear_num_value_heads"]
    kd, vd = c["linear_key_head_dim"], c["linear_value_head_dim"]
    ids = np.random.default_rng(4).integers(0, c["vocab_size"], (2, 50)).astype(np.int32)
    seen = []
    logits, got = model.forward(
        ids, capture=["delta_net_qkv", "delta_net_log_decay", "delta_net_beta", "delta_net_state"],
        hooks={"delta_net_state": lambda layer, s: seen.append((layer, s.copy(), s.flags.writeable))})
    assert np.array_equal(logits, model.forward(ids))
    assert list(got["delta_net_state"]) == [0]  # layer 1 is full attention
    state = got["delta_net_state"][0]
    assert state.shape == (2, vh, kd, vd)
    assert len(seen) == 1 and seen[0][0] == 0 and np.array_equal(seen[0][1], state)
    assert not seen[0][2]  # read only
    qkv = got["delta_net_qkv"][0].astype(np.float64)
    assert qkv.shape == (2, 50, 2 * kh * kd + vh * vd)
    g, beta = got["delta_net_log_decay"][0], got["delta_net_beta"][0]
    for b in range(2):
        for h in range(vh):
            key = h // (vh // kh)
            k = qkv[b, :, kh * kd + key * kd:kh * kd + (key + 1) * kd]
            v = qkv[b, :, 2 * kh * kd + h * vd:2 * kh * kd + (h + 1) * vd]
            want = delta_rule_final_state(k, v, g[b, :, h], beta[b, :, h])
            scale = np.abs(want).max()
            assert scale > 0
            np.testing.assert_allclose(state[b, h], want, rtol=0, atol=1e-4 * scale)


def test_two_models_in_two_threads_give_their_single_threaded_results(model_dir, wide_model):
    # and a third thread on the second model: a pass that finds the model's state in use
    models = [gattn.load(model_dir), gattn.load(wide_model)]
    ids = [infer_bits_ids(64, 4096, 2).reshape(2, 32), IDS]
    alone = [m.forward(x) for m, x in zip(models, ids)]
    got = [[], [], []]

    def passes(thread, i):
        for _ in range(20):
            got[thread].append(models[i].forward(ids[i]))
    threads = [threading.Thread(target=passes, args=(t, i)) for t, i in enumerate([0, 1, 1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for thread, i in enumerate([0, 1, 1]):
        assert len(got[thread]) == 20
        assert all(np.array_equal(g.view(np.uint32), alone[i].view(np.uint32))
                   for g in got[thread])


@pytest.fixture(scope="module")
def run_config(tmp_path_factory):
    work = tmp_path_factory.mktemp("train")
    subprocess.run([os.path.join(BUILD, "gattn"), "synthetic", "--out", str(work / "data"),
                    "--train-tokens", "20000", "--val-tokens", "4000"], check=True,
                   capture_output=True)
    run = {"model": os.path.join(ROOT, "tests", "cli", "tiny_g1_65.json"),
           "data": {"train": str(work / "data" / "train.bin"), "val": str(work / "data" / "val.bin"),
                    "seq_len": 32, "window": "bos"},
           "batch_size": 4, "steps": 6, "eval": {"every": 3, "windows": 8},
           "checkpoint": {"every": 0, "keep": 1}, "threads": 1, "out": "unused",
           "optimizer": {"lr": 0.01}, "schedule": {"warmup_steps": 2}}
    (work / "run.json").write_text(json.dumps(run))
    subprocess.run([os.path.join(BUILD, "gattn"), "train", "--config", str(work / "run.json"),
                    "--out", str(work / "cli")], check=True, capture_output=True)
    return work


def final_weights(run_dir):
    return (run_dir / "checkpoints" / "step_00000006" / "model.safetensors").read_bytes()


def losses(run_dir):
    with open(run_dir / "metrics.jsonl") as f:
        return [r["loss"] for r in map(json.loads, f) if "loss" in r]


def test_train_equals_the_clis_run_bit_for_bit(run_config):
    records = []
    result = gattn.train(str(run_config / "run.json"), out=str(run_config / "py"),
                         callback=records.append)
    assert result["steps_done"] == 6 and not result["stopped_by_callback"]
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert all(k in records[0] for k in ("loss", "lr", "grad_norm", "tokens_per_s"))
    assert final_weights(run_config / "py") == final_weights(run_config / "cli")
    assert losses(run_config / "py") == losses(run_config / "cli")
    assert result["summary"]["final_train_loss"] == records[-1]["loss"]


def test_train_stops_from_the_callback_and_ctrl_c_and_resumes(run_config):
    out = str(run_config / "stopped")
    result = gattn.train(str(run_config / "run.json"), out=out,
                         callback=lambda r: r["step"] < 2)
    assert result["stopped_by_callback"] and result["steps_done"] == 2
    assert os.path.isdir(os.path.join(out, "checkpoints", "step_00000002"))

    def interrupt(record):  # the signal lands during step 3's callback
        if record["step"] == 3:
            os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        gattn.train(str(run_config / "run.json"), out=out, resume=True, callback=interrupt)
    assert os.path.isdir(os.path.join(out, "checkpoints", "step_00000003"))

    def fails(record):
        raise RuntimeError("callback failed")
    with pytest.raises(RuntimeError, match="callback failed"):
        gattn.train(str(run_config / "run.json"), out=out, resume=True, callback=fails)
    assert gattn.train(str(run_config / "run.json"), out=out, resume=True)["steps_done"] == 6
    assert final_weights(run_config / "stopped") == final_weights(run_config / "cli")
    with pytest.raises(ValueError, match="nowhere"):
        gattn.train(str(run_config / "nowhere.json"))


def safetensors(path):
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        data = f.read()
    return {name: np.frombuffer(data[t["data_offsets"][0]:t["data_offsets"][1]],
                                dtype=np.float32).reshape(t["shape"])
            for name, t in header.items() if name != "__metadata__"}


def test_parameters_view_the_engines_weights(wide_model):
    folder = os.path.join(wide_model, "checkpoints", "step_00000007")
    model = gattn.load(folder)
    params = model.parameters()
    stored = safetensors(os.path.join(folder, "model.safetensors"))
    assert set(params) == set(stored)
    assert all(np.array_equal(params[n], stored[n]) for n in stored)
    name = "model.layers.1.self_attn.o_proj.weight"
    with pytest.raises(ValueError, match="read-only"):
        params[name][0, 0] = 1
    base = model.forward(IDS)
    writable = model.parameters(writable=True)
    kept = writable[name].copy()
    writable[name][...] = 0
    assert not np.array_equal(model.forward(IDS), base)
    writable[name][...] = kept
    assert np.array_equal(model.forward(IDS), base)

    bf16 = gattn.load(folder, dtype="bf16").parameters()
    bits = stored[name].view(np.uint32).astype(np.uint64)
    nearest_even = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    got = bf16[name].view(np.uint16)
    assert got.shape == stored[name].shape and np.array_equal(got, nearest_even)
    import ml_dtypes  # scripts/setup.sh installs it; without it the views are uint16 bits
    assert bf16[name].dtype == ml_dtypes.bfloat16
    assert np.array_equal(bf16[name].astype(np.float32).view(np.uint32),
                          nearest_even.astype(np.uint32) << 16)
    without = subprocess.run([sys.executable, "-c", (
        "import sys; sys.modules['ml_dtypes'] = None; import gattn; "
        f"print(gattn.load({folder!r}, dtype='bf16').parameters()[{name!r}].dtype)")],
        check=True, capture_output=True, text=True)
    assert without.stdout.strip() == "uint16"
    with pytest.raises(ValueError, match="stored as bf16; load the model with dtype='f32'"):
        gattn.load(folder, dtype="bf16").parameters(writable=True)


def test_analyze_equals_the_clis_analysis(run_config, hybrid_model, tmp_path):
    val = str(run_config / "data" / "val.bin")
    out = tmp_path / "analysis.json"
    subprocess.run([os.path.join(BUILD, "gattn"), "analyze", "--checkpoint",
                    str(run_config / "cli"), "--data", val, "--sequences", "8", "--seq", "32",
                    "--map", "0:1", "--intervene", "layer:0:gate=closed", "--threads",
                    str(gattn.threads()), "--out", str(out)], check=True, capture_output=True)
    with open(out) as f:
        want = json.load(f)
    got = gattn.load(str(run_config / "cli")).analyze(
        val, sequences=8, seq=32, maps=[(0, 1)], interventions={"layer:0:gate": "closed"})
    assert isinstance(got, gattn.analysis.Analysis) and got.json == want
    assert got.f_attn == want["f_attn"] and got.loss == want["loss"]
    assert got.unmodified_loss == want["unmodified_loss"] and got.interventions
    layer = got.layers[1]
    assert np.array_equal(layer.first_token_attention, want["layers"][1]["first_token_attention"])
    assert np.array_equal(got.first_token_attention()[1], layer.first_token_attention)
    assert np.array_equal(layer.gate.mean_score, want["layers"][1]["gate"]["mean_score"])
    attention_map = got.attention_maps[(0, 1)]
    assert attention_map.shape == (32, 32)
    np.testing.assert_allclose(attention_map.sum(axis=1), 1, rtol=0, atol=1e-5)
    # a Gated DeltaNet layer: no attention, its gate statistics
    hybrid = gattn.load(hybrid_model).analyze(val, sequences=4, seq=32)
    assert [l.kind for l in hybrid.layers] == ["linear_attention", "full_attention"]
    assert hybrid.layers[0].first_token_attention is None and hybrid.layers[0].delta_net
    assert np.isnan(hybrid.first_token_attention()[0]).all()
    with pytest.raises(ValueError, match="seq must be in"):
        gattn.load(hybrid_model).analyze(val, seq=1)
    with pytest.raises(ValueError, match="attention map 5:0 is outside"):
        gattn.load(hybrid_model).analyze(val, seq=32, maps=[(5, 0)])


def test_the_package_ships_type_stubs():
    import ast
    folder = os.path.dirname(gattn._gattn.__file__)
    assert os.path.exists(os.path.join(folder, "py.typed"))
    with open(os.path.join(folder, "_gattn.pyi")) as f:
        stub = ast.parse(f.read())
    model = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    assert ast.unparse(methods["analyze"].returns) == "gattn.analysis.Analysis"
    assert "NDArray[numpy.float32]" in ast.unparse(methods["forward"].returns)
    assert ast.get_docstring(methods["forward"]).startswith("Logits")
