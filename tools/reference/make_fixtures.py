#!/usr/bin/env python3
"""Golden fixtures for gattn: float64 reference logits / loss / gradients per config.

Usage: make_fixtures.py [--out DIR] [--only NAME ...] [--skip-anchor]

1. HF anchor (needs transformers; skipped loudly without it): tiny random HF Qwen3ForCausalLM and
   Qwen3NextForCausalLM in float64 are mapped onto the reference; logits must agree to 1e-10
   relative, else the script exits non-zero.
2. One <name>.safetensors per fixture in --out (default tests/fixtures), written by the small
   writer below (no safetensors package needed). Deterministic: rerunning gives identical bytes.
"""
import argparse
import json
import math
import os
import struct
import sys
import types
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gattn_ref as ref  # noqa: E402

torch.set_num_threads(1)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BATCH, SEQ = 2, 72

BASE = {
    "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 12, "intermediate_size": 48, "rope_theta": 10000.0,
    "partial_rotary_factor": 1.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    "use_qk_norm": True, "max_position_embeddings": 128, "initializer_range": 0.02,
}

HYBRID = {"num_hidden_layers": 3, "layer_types": ["linear_attention", "full_attention", "linear_attention"],
          "linear_num_key_heads": 2, "linear_key_head_dim": 12, "linear_value_head_dim": 10,
          "linear_conv_kernel_dim": 4}

# name -> (config overrides, gate object or None). "block_output_clip": "auto" is resolved below.
FIXTURES = [
    ("baseline", {}, None),
    ("g1_elementwise", {}, {"position": "sdpa"}),
    ("g2_elementwise", {}, {"position": "value"}),
    ("g3_elementwise", {}, {"position": "key"}),
    ("g4_elementwise", {}, {"position": "query"}),
    ("g5_elementwise", {}, {"position": "dense"}),
    ("g1_headwise", {}, {"position": "sdpa", "granularity": "headwise"}),
    ("g2_headwise", {}, {"position": "value", "granularity": "headwise"}),
    ("g1_head_shared", {}, {"position": "sdpa", "sharing": "head_shared"}),
    ("g2_head_shared", {}, {"position": "value", "sharing": "head_shared"}),
    ("g1_additive_silu", {}, {"position": "sdpa", "activation": "silu", "mode": "additive"}),
    ("g1_silu", {}, {"position": "sdpa", "activation": "silu"}),
    ("g1_head_rmsnorm", {}, {"position": "sdpa", "kind": "head_rmsnorm"}),
    ("g1_silu_only", {}, {"position": "sdpa", "kind": "silu_only"}),
    ("g1_additive_identity", {}, {"position": "sdpa", "activation": "identity", "mode": "additive"}),
    ("g1_input_independent", {}, {"position": "sdpa", "kind": "input_independent"}),
    ("g1_ns_sigmoid", {}, {"position": "sdpa", "kind": "ns_sigmoid"}),
    ("g3_headwise_after_qk_norm", {}, {"position": "key", "granularity": "headwise", "after_qk_norm": True}),
    ("g4_after_qk_norm_head_shared", {}, {"position": "query", "sharing": "head_shared", "after_qk_norm": True}),
    ("g2_headwise_head_shared_identity_mult", {},
     {"position": "value", "granularity": "headwise", "sharing": "head_shared", "activation": "identity"}),
    ("g1_qwen3next_like",
     {"tie_word_embeddings": True, "num_key_value_heads": 4, "partial_rotary_factor": 0.5, "use_qk_norm": False},
     {"position": "sdpa"}),
    # MODEL.md requires head_dim * partial_rotary_factor to be an even integer: 12 * 0.25 = 3 is not,
    # so this fixture uses head_dim 24 (R = 6 rotary channels, 18 pass-through; 24 is still not a
    # multiple of 16, so a 16-wide SIMD loop keeps a tail).
    ("baseline_mqa_partial",
     {"num_key_value_heads": 1, "partial_rotary_factor": 0.25, "head_dim": 24, "use_qk_norm": False,
      "tie_word_embeddings": True},
     None),
    ("g1_sandwich_clip", {"sandwich_norm": True, "block_output_clip": "auto"}, {"position": "sdpa"}),
    ("g5_input_independent_additive", {},
     {"position": "dense", "kind": "input_independent", "activation": "silu", "mode": "additive"}),
    # Gated DeltaNet layers (MODEL.md): r = 2 value heads per key head, head dims 12 and 10 (SIMD
    # tails), 72 tokens = one chunk of 64 and a tail of 8; and r = 1 without a gate, tied.
    ("hybrid_g1", dict(HYBRID, linear_num_value_heads=4), {"position": "sdpa"}),
    ("hybrid_r1_baseline", dict(HYBRID, linear_num_value_heads=2, tie_word_embeddings=True), None),
]

CLIP_QUANTILE = 0.75  # aim: ~25% of block-output elements clipped
GATE_Z_STD = 1.5      # std of gate pre-activations z -> sigmoid(z) spread over ~(0.05, 0.95)


# ----------------------------------------------------------------------------- safetensors writer

_ST_DTYPE = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64", np.dtype("<i8"): "I64"}


def write_safetensors(path, tensors, metadata):
    """tensors: name -> numpy array (F32/F64/I64). Sorted names; data in header order."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        b = a.tobytes()
        header[name] = {"dtype": _ST_DTYPE[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hj = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """Minimal reader (used for the self-check)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    rev = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}
    out = {}
    for k, v in header.items():
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dtype=rev[v["dtype"]]).reshape(v["shape"])
    return out, meta


# ----------------------------------------------------------------------------- random weights

def _rng(seed, name):
    return np.random.RandomState(zlib.crc32(("%d:%s" % (seed, name)).encode()) & 0x7FFFFFFF)


def init_scale(name, shape, c):
    """(kind, scale) for a tensor; kind 'norm' -> 1 + scale*randn, 'normal' -> scale*randn."""
    leaf = name.split(".")[-2]
    if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
        return "norm", 0.1
    if name.endswith("_gate.logit"):
        return "normal", GATE_Z_STD
    if name.endswith("_gate.weight"):
        return "normal", GATE_Z_STD / math.sqrt(shape[1])
    if name == "model.embed_tokens.weight":
        return "normal", 0.5
    if name == "lm_head.weight":
        return "normal", 2.0 / math.sqrt(shape[1])
    if leaf in ("q_proj", "k_proj"):
        return "normal", 1.3 / math.sqrt(shape[1])
    if leaf in ("v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        return "normal", 1.0 / math.sqrt(shape[1])
    # Gated DeltaNet: projections as the others; the conv over its K taps; dt_bias and A_log so
    # that the per-token decays exp(g) spread over about (0.2, 0.95) (log decay near -softplus(0)).
    if leaf in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"):
        return "normal", 1.0 / math.sqrt(shape[1])
    if leaf == "conv1d":
        return "normal", 1.0 / math.sqrt(shape[2])
    if name.endswith("linear_attn.dt_bias") or name.endswith("linear_attn.A_log"):
        return "normal", 0.7
    raise KeyError(name)


def make_params(cfg, seed):
    """name -> float32 numpy array (random, then rounded to float32)."""
    c = ref.Cfg(cfg)
    out = {}
    for name, shape in ref.param_shapes(c).items():
        kind, sc = init_scale(name, shape, c)
        z = _rng(seed, name).standard_normal(shape)
        a = 1.0 + sc * z if kind == "norm" else sc * z
        out[name] = a.astype(np.float32)
    return out


def make_batch(cfg, seed):
    r = _rng(seed, "__batch__")
    V = cfg["vocab_size"]
    ids = r.randint(0, V, size=(BATCH, SEQ)).astype(np.int64)
    tg = r.randint(0, V, size=(BATCH, SEQ)).astype(np.int64)
    tg[r.uniform(size=(BATCH, SEQ)) < 0.1] = -1
    return ids, tg


def to_torch(P, dtype):
    return {k: torch.from_numpy(v).to(dtype) for k, v in P.items()}


# ----------------------------------------------------------------------------- HF anchor

def _rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def _patch_hf_fp64(model, norm_cls, zero_centred, rotary_mod, cfg):
    """HF computes RMSNorm (x.float()), RoPE tables and eager softmax in float32 even for a
    float64 model. For a 1e-10 comparison swap in float64-preserving versions of exactly those
    formulas (the layout code under test - projections, q/gate split, rotate_half, GQA, residuals -
    stays HF's own) and use the sdpa attention path, which keeps the input dtype."""
    def norm_fwd(self, x):
        eps = getattr(self, "eps", getattr(self, "variance_epsilon", None))
        xn = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return xn * (1.0 + self.weight) if zero_centred else self.weight * xn

    n = 0
    for m in model.modules():
        if isinstance(m, norm_cls):
            m.forward = types.MethodType(norm_fwd, m)
            n += 1
    rp = cfg.rope_parameters
    head_dim = cfg.head_dim
    dim = int(head_dim * rp.get("partial_rotary_factor", 1.0))
    inv64 = 1.0 / (rp["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    # our float64 table must be the one HF computes in float32
    assert torch.allclose(inv64.float(), rotary_mod.inv_freq.float(), rtol=1e-6), (inv64, rotary_mod.inv_freq)

    def rot_fwd(self, x, position_ids):
        if position_ids.dim() == 3:  # Qwen3.5's M-RoPE rows (text, height, width): equal for text
            assert (position_ids == position_ids[0]).all()
            position_ids = position_ids[0]
        freqs = position_ids[..., None].to(torch.float64) * inv64
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    rotary_mod.forward = types.MethodType(rot_fwd, rotary_mod)
    return n


def _compare(tag, ours, hf_stock, hf_fp64, tol=1e-10):
    d_stock = (ours - hf_stock).abs().max().item()
    d = (ours - hf_fp64).abs().max().item()
    r = _rel(hf_fp64, ours)
    print("  %-10s stock HF (fp32 internals): max|d| %.3e rel %.3e" % (tag, d_stock, _rel(hf_stock, ours)))
    print("  %-10s HF, fp64 norm/rope/sdpa:   max|d| %.3e rel %.3e  (max|logit| %.2f)"
          % (tag, d, r, ours.abs().max().item()))
    ok = r < tol
    print("  %-10s %s (tolerance rel < %.0e)" % (tag, "AGREES" if ok else "DISAGREES", tol))
    return ok, {"stock_max_abs": d_stock, "stock_rel": _rel(hf_stock, ours), "max_abs": d, "rel": r}


def _set_attn(model, impl):
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(impl)
    else:
        model.config._attn_implementation = impl


def anchor_qwen3():
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from transformers.models.qwen3 import modeling_qwen3 as mq

    cfg = dict(BASE, rope_theta=1000.0, rms_norm_eps=1e-5)
    c = ref.Cfg(cfg)
    P = to_torch(make_params(cfg, 9001), torch.float64)
    ids, _ = make_batch(cfg, 9001)
    ids = torch.from_numpy(ids)
    hc = Qwen3Config(vocab_size=c.V, hidden_size=c.C, intermediate_size=c.I, num_hidden_layers=c.L,
                     num_attention_heads=c.H, num_key_value_heads=c.K, head_dim=c.d, rms_norm_eps=c.eps,
                     rope_parameters={"rope_type": "default", "rope_theta": c.theta},
                     max_position_embeddings=c.max_pos, tie_word_embeddings=False, attention_bias=False)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(hc).to(torch.float64).eval()
    sd = model.state_dict()
    assert set(sd) == set(P), sorted(set(sd) ^ set(P))  # HF Qwen3 names == MODEL.md names
    model.load_state_dict({k: v.clone() for k, v in P.items()}, strict=True)
    ours = ref.forward(c, P, ids)
    with torch.no_grad():
        _set_attn(model, "eager")
        stock = model(input_ids=ids).logits
        _patch_hf_fp64(model, mq.Qwen3RMSNorm, False, model.model.rotary_emb, hc)
        _set_attn(model, "sdpa")
        hf = model(input_ids=ids).logits
    return _compare("Qwen3", ours, stock, hf)


def _qwen_next_state_dict(P, H, d):
    """Our parameters in Qwen3-Next's / Qwen3.5's layout: every RMSNorm but the Gated DeltaNet's
    output norm zero-centred (HF computes x_normed * (1 + w)), the gate rows inside q_proj per
    head (q_proj(x).view(..., H, 2d).chunk(2, -1): rows [query d | gate d] of each head)."""
    sd = {}
    for k, v in P.items():
        if k.endswith("self_attn.sdpa_gate.weight"):
            continue
        if k.endswith("norm.weight") and not k.endswith("linear_attn.norm.weight"):
            sd[k] = v - 1.0
        elif k.endswith("self_attn.q_proj.weight"):
            g = P[k.replace("q_proj", "sdpa_gate")]
            sd[k] = torch.cat([v.reshape(H, d, -1), g.reshape(H, d, -1)], dim=1).reshape(2 * H * d, -1)
        else:
            sd[k] = v.clone()
    return sd


def _partial_rotary_hf_fields(c):
    """The config fields Qwen3-Next's and Qwen3.5's anchors share (rotary on a quarter of d)."""
    return dict(vocab_size=c.V, hidden_size=c.C, intermediate_size=c.I, num_hidden_layers=c.L,
                num_attention_heads=c.H, num_key_value_heads=c.K, head_dim=c.d, rms_norm_eps=c.eps,
                rope_parameters={"rope_type": "default", "rope_theta": c.theta, "partial_rotary_factor": 0.25},
                max_position_embeddings=c.max_pos, tie_word_embeddings=False, attention_bias=False)


def anchor_qwen3next():
    from transformers.models.qwen3_next import Qwen3NextConfig, Qwen3NextForCausalLM
    from transformers.models.qwen3_next import modeling_qwen3_next as mn

    # head_dim 16 so that 0.25 * head_dim = 4 is an even rotary width (MODEL.md requirement)
    cfg = dict(BASE, head_dim=16, partial_rotary_factor=0.25, rope_theta=1000.0, gate={"position": "sdpa"})
    c = ref.Cfg(cfg)
    P = to_torch(make_params(cfg, 9002), torch.float64)
    ids, _ = make_batch(cfg, 9002)
    ids = torch.from_numpy(ids)
    hc = Qwen3NextConfig(**_partial_rotary_hf_fields(c), layer_types=["full_attention"] * c.L,
                         mlp_only_layers=list(range(c.L)))
    torch.manual_seed(0)
    model = Qwen3NextForCausalLM(hc).to(torch.float64).eval()
    for layer in model.model.layers:
        assert isinstance(layer.mlp, mn.Qwen3NextMLP) and isinstance(layer.self_attn, mn.Qwen3NextAttention)
    # map ours -> HF
    H, d = c.H, c.d
    sd = _qwen_next_state_dict(P, H, d)
    hsd = model.state_dict()
    assert set(hsd) == set(sd), sorted(set(hsd) ^ set(sd))
    model.load_state_dict(sd, strict=True)
    ours = ref.forward(c, P, ids)
    with torch.no_grad():
        _set_attn(model, "eager")
        stock = model(input_ids=ids).logits
        _patch_hf_fp64(model, mn.Qwen3NextRMSNorm, True, model.model.rotary_emb, hc)
        _set_attn(model, "sdpa")
        hf = model(input_ids=ids).logits
        # negative control: the same weights with the gate rows taken as a contiguous block
        # (the authors' grouped layout when K == H would differ too) must NOT agree
        bad = dict(sd)
        for l in range(c.L):
            k = "model.layers.%d.self_attn.q_proj.weight" % l
            bad[k] = torch.cat([P[k], P[k.replace("q_proj", "sdpa_gate")]], dim=0)
        model.load_state_dict(bad, strict=True)
        wrong = model(input_ids=ids).logits
    print("  Qwen3Next  negative control (gate rows as one block instead of interleaved): rel %.3e"
          % _rel(wrong, ours))
    ok, res = _compare("Qwen3Next", ours, stock, hf)
    ok = ok and _rel(wrong, ours) > 1e-3
    return ok, res


def _fp64_source(name, module, owner=None):
    """Function NAME of MODULE (a method of class OWNER there) recompiled from the module's source
    text with every float32 cast (torch.float32, .float()) made float64: transformers computes the gated delta rule and its
    gated norm in float32 whatever the model's dtype; the formulas stay its own."""
    import inspect
    import textwrap
    text = inspect.getsource(module)
    if owner is not None:
        text = text[text.index("class %s(" % owner):]
    start = text.index("def %s(" % name)
    indent = len(text[:start]) - len(text[:start].rstrip(" "))
    lines = text[start - indent:].splitlines()
    body = [lines[0]]
    for line in lines[1:]:
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent and not line.lstrip().startswith(")"):
            break
        body.append(line)
    src = textwrap.dedent("\n".join(body)).replace("torch.float32", "torch.float64")
    src = src.replace(".float()", ".double()")
    namespace = dict(vars(module))
    exec(compile(src, "<fp64 %s>" % name, "exec"), namespace)  # noqa: S102
    return namespace[name]


def anchor_qwen35_hybrid():
    from transformers.models.qwen3_5 import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    from transformers.models.qwen3_5 import modeling_qwen3_5 as mn

    cfg = dict(BASE, **HYBRID, linear_num_value_heads=4, head_dim=16, partial_rotary_factor=0.25,
               rope_theta=1000.0, gate={"position": "sdpa"})
    c = ref.Cfg(cfg)
    P = to_torch(make_params(cfg, 9003), torch.float64)
    ids, _ = make_batch(cfg, 9003)
    ids = torch.from_numpy(ids)
    hc = Qwen3_5TextConfig(**_partial_rotary_hf_fields(c), layer_types=c.layer_types,
                           linear_num_key_heads=c.lin_Hk, linear_num_value_heads=c.lin_Hv,
                           linear_key_head_dim=c.lin_dk, linear_value_head_dim=c.lin_dv,
                           linear_conv_kernel_dim=c.lin_conv)
    torch.manual_seed(0)
    model = Qwen3_5ForCausalLM(hc).to(torch.float64).eval()
    sd = _qwen_next_state_dict(P, c.H, c.d)
    hsd = model.state_dict()
    assert set(hsd) == set(sd), sorted(set(hsd) ^ set(sd))
    model.load_state_dict(sd, strict=True)
    ours = ref.forward(c, P, ids)
    with torch.no_grad():
        _set_attn(model, "eager")
        stock = model(input_ids=ids).logits
        for name in ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule"):
            setattr(mn, name, _fp64_source(name, mn))
        mn.Qwen3_5RMSNormGated.forward = _fp64_source("forward", mn, "Qwen3_5RMSNormGated")
        mn.Qwen3_5GatedDeltaNet.forward = _fp64_source("forward", mn, "Qwen3_5GatedDeltaNet")
        _patch_hf_fp64(model, mn.Qwen3_5RMSNorm, True, model.model.rotary_emb, hc)
        _set_attn(model, "sdpa")
        hf = model(input_ids=ids).logits
    return _compare("Qwen3.5", ours, stock, hf)


def run_anchor():
    try:
        import transformers
    except Exception as e:  # noqa: BLE001
        bar = "!" * 78
        print("%s\n!!! HF ANCHOR SKIPPED: transformers is not importable (%s).\n"
              "!!! The fixtures below are NOT anchored to Hugging Face Qwen3 / Qwen3-Next.\n%s" % (bar, e, bar))
        return None
    print("HF anchor (transformers %s, torch %s, float64):" % (transformers.__version__, torch.__version__))
    ok1, r1 = anchor_qwen3()
    ok2, r2 = anchor_qwen3next()
    ok3, r3 = anchor_qwen35_hybrid()
    if not (ok1 and ok2 and ok3):
        print("HF ANCHOR FAILED", file=sys.stderr)
        sys.exit(1)
    return {"qwen3": r1, "qwen3_next": r2, "qwen3_5_hybrid": r3}


# ----------------------------------------------------------------------------- self-test

def selftest():
    """Gate plumbing identities that hold exactly (or to ~eps) whatever the weights: they pin the
    placement, head mapping and sharing semantics that the HF anchor cannot reach."""
    base = dict(BASE)
    ids = torch.from_numpy(make_batch(base, 7)[0])
    P0 = to_torch(make_params(base, 7), torch.float64)
    y0 = ref.forward(base, P0, ids)
    c = ref.Cfg(base)
    checks = []

    def ii(gate, logit_fn, extra_P=None, cfg_over=None):
        cfg = dict(base, gate=dict(gate, kind="input_independent"), **(cfg_over or {}))
        cc = ref.Cfg(cfg)
        P = dict(P0)
        for l in range(cc.L):
            P["model.layers.%d.self_attn.%s_gate.logit" % (l, cc.pos)] = logit_fn(cc.gate_S())
        if extra_P:
            P.update(extra_P)
        return ref.forward(cfg, P, ids)

    one = lambda S: torch.ones(S, dtype=torch.float64)  # noqa: E731
    zero = lambda S: torch.zeros(S, dtype=torch.float64)  # noqa: E731
    # 1. multiplicative identity with logit 1 / additive identity with logit 0: no-op at every position
    for pos in ("sdpa", "value", "key", "query", "dense"):
        for aq in ((False, True) if pos in ("query", "key") else (False,)):
            g = {"position": pos, "activation": "identity"}
            if aq:
                g["after_qk_norm"] = True
            checks.append(("mult id x1 %s%s" % (pos, " after" if aq else ""), _rel(ii(g, one), y0), 1e-14))
            checks.append(("add id +0 %s%s" % (pos, " after" if aq else ""),
                           _rel(ii(dict(g, mode="additive"), zero), y0), 1e-14))
    # 2. scaling q (or k) by 3 before qk_norm is undone by the norm (up to eps); after it, it is not
    for pos in ("query", "key"):
        g = {"position": pos, "activation": "identity", "granularity": "headwise"}
        three = lambda S: 3.0 * torch.ones(S, dtype=torch.float64)  # noqa: E731
        checks.append(("x3 %s before qk_norm == baseline" % pos, _rel(ii(g, three), y0), 1e-5))
        checks.append(("x3 %s after qk_norm != baseline" % pos,
                       -_rel(ii(dict(g, after_qk_norm=True), three), y0), -1e-2))
    # 3. GQA head mapping: value headwise scale (a_kv) == sdpa headwise scale a_{h // G}
    a = torch.tensor([0.7, 1.9], dtype=torch.float64)
    yv = ii({"position": "value", "activation": "identity", "granularity": "headwise"}, lambda S: a)
    ys = ii({"position": "sdpa", "activation": "identity", "granularity": "headwise"},
            lambda S: a.repeat_interleave(c.G))
    checks.append(("value headwise a_k == sdpa headwise a_{h//G}", _rel(yv, ys), 1e-13))
    # elementwise too: score j -> head j // d, channel j % d
    av = torch.linspace(0.5, 1.5, c.K * c.d, dtype=torch.float64)
    yv = ii({"position": "value", "activation": "identity"}, lambda S: av)
    ys = ii({"position": "sdpa", "activation": "identity"},
            lambda S: av.reshape(c.K, 1, c.d).expand(c.K, c.G, c.d).reshape(-1))
    checks.append(("value elementwise == sdpa elementwise (GQA map)", _rel(yv, ys), 1e-13))
    # 4. dense constant scale == scaling o_proj
    Po = {k: (v * 1.7 if k.endswith("o_proj.weight") else v) for k, v in P0.items()}
    checks.append(("dense x1.7 == o_proj x1.7",
                   _rel(ii({"position": "dense", "activation": "identity"}, lambda S: 1.7 * one(S)),
                        ref.forward(base, Po, ids)), 1e-13))
    # 5. head_shared == head_specific when every head has the same gate rows (and differs otherwise)
    cfg = dict(base, gate={"position": "sdpa"})
    P = dict(P0)
    for l in range(c.L):
        W = torch.randn(c.d, c.C, dtype=torch.float64, generator=torch.Generator().manual_seed(l)) * 0.3
        P["model.layers.%d.self_attn.sdpa_gate.weight" % l] = W.repeat(c.H, 1)
    ys = ref.forward(dict(cfg, gate={"position": "sdpa", "sharing": "head_shared"}), P, ids)
    checks.append(("head_shared == head_specific for equal heads", _rel(ys, ref.forward(cfg, P, ids)), 1e-14))
    # 6. head_shared averages after the activation: sigmoid-mean != sigmoid(mean-logit)
    P1 = dict(P0)
    for l in range(c.L):
        P1["model.layers.%d.self_attn.sdpa_gate.logit" % l] = torch.linspace(-3, 3, c.H * c.d, dtype=torch.float64)
    cs = dict(base, gate={"position": "sdpa", "kind": "input_independent", "sharing": "head_shared"})
    sc = torch.sigmoid(torch.linspace(-3, 3, c.H * c.d, dtype=torch.float64)).reshape(c.H, c.d).mean(0)
    P2 = dict(P0)
    for l in range(c.L):
        P2["model.layers.%d.self_attn.sdpa_gate.logit" % l] = sc.repeat(c.H)
    cm = dict(base, gate={"position": "sdpa", "kind": "input_independent", "activation": "identity"})
    checks.append(("head_shared = mean over heads of sigmoid", _rel(ref.forward(cs, P1, ids),
                                                                      ref.forward(cm, P2, ids)), 1e-14))
    bad = [x for x in checks if not x[1] < x[2]]
    if os.environ.get("GATTN_REF_VERBOSE"):
        for name, v, tol in checks:
            print("  %-50s %.3e (%s %.0e)" % (name, abs(v), "<" if tol > 0 else ">", abs(tol)))
    print("self-test: %d gate identities, %s" % (len(checks), "all hold" if not bad else "FAILED"))
    for name, v, tol in bad:
        print("  FAILED %s: %.3e (tol %.0e)" % (name, abs(v), abs(tol)), file=sys.stderr)
    if bad:
        sys.exit(1)


# ----------------------------------------------------------------------------- fixtures

def resolve_config(overrides, gate):
    cfg = dict(BASE)
    cfg.update(overrides)
    if gate is not None:
        cfg["gate"] = dict(gate)
    return cfg


def choose_clip(cfg, P64, ids):
    """Pick c so that ~CLIP_QUANTILE of block outputs stay inside and no element sits near +-c."""
    probe = dict(cfg)
    probe.pop("block_output_clip")
    st = {}
    with torch.no_grad():
        ref.forward(probe, P64, ids, st)
    a = torch.cat(st["block_out"]).abs()
    c0 = float(torch.quantile(a, CLIP_QUANTILE))
    c0 = float("%.3g" % c0)
    for step in range(100):
        cand = float("%.4g" % (c0 * (1 + 0.0037 * step)))
        test = dict(cfg, block_output_clip=cand)
        st = {}
        with torch.no_grad():
            ref.forward(test, P64, ids, st)
        a = torch.cat(st["block_out"]).abs()
        margin = ((a - cand).abs() / cand).min().item()
        if margin > 1e-4:
            return cand, (a > cand).double().mean().item(), margin
    raise RuntimeError("no clip value with margin")


def fixture(name, overrides, gate, seed, out_dir, versions):
    cfg = resolve_config(overrides, gate)
    ids_np, tg_np = make_batch(cfg, seed)
    P32 = make_params(cfg, seed)
    P64 = to_torch(P32, torch.float64)
    ids, tg = torch.from_numpy(ids_np), torch.from_numpy(tg_np)
    extra = ""
    if cfg.get("block_output_clip") == "auto":
        clip, frac, margin = choose_clip(cfg, P64, ids)
        cfg["block_output_clip"] = clip
        extra = "  clip c=%g clips %.1f%% of block outputs (min | |a|-c |/c = %.1e)" % (clip, 100 * frac, margin)
    c = ref.Cfg(cfg)
    assert set(P32) == set(ref.param_shapes(c))

    st = {}
    logits64, loss64, g64 = ref.run(c, P64, ids, tg, st)
    logits32, loss32, g32 = ref.run(c, to_torch(P32, torch.float32), ids, tg)
    for v in list(g64.values()) + [logits64, loss64]:
        assert torch.isfinite(v).all()

    # autograd sanity: central difference of the loss along a random direction
    gen = torch.Generator().manual_seed(seed)
    D = {k: torch.randn(v.shape, dtype=torch.float64, generator=gen) * (v.abs().mean() + 1e-3) for k, v in P64.items()}
    eps = 1e-6
    with torch.no_grad():
        lp = ref.loss_fn(ref.forward(c, {k: P64[k] + eps * D[k] for k in P64}, ids), tg).item()
        lm = ref.loss_fn(ref.forward(c, {k: P64[k] - eps * D[k] for k in P64}, ids), tg).item()
    fd = (lp - lm) / (2 * eps)
    an = sum((g64[k] * D[k]).sum().item() for k in P64)
    fd_rel = abs(fd - an) / abs(an)
    assert fd_rel < 1e-6, (name, fd, an)

    def rel(a32, a64):
        n = a64.norm().item()
        e = (a32.double() - a64).norm().item()
        return e / n if n > 0 else (0.0 if e == 0 else float("inf"))

    err = {"logits": rel(logits32, logits64), "loss": rel(loss32.reshape(1), loss64.reshape(1))}
    for k in g64:
        err["grad." + k] = rel(g32[k], g64[k])
    err_fmt = {k: float("%.3e" % v) for k, v in err.items()}

    tensors = {k: v for k, v in P32.items()}
    tensors["input_ids"] = ids_np
    tensors["targets"] = tg_np
    tensors["logits"] = logits64.numpy().astype(np.float32)
    tensors["loss"] = loss64.reshape(1).numpy().astype(np.float64)
    for k, v in g64.items():
        tensors["grad." + k] = v.numpy().astype(np.float32)
    meta = {
        "config": json.dumps(cfg, sort_keys=True),
        "batch": str(BATCH),
        "seq": str(SEQ),
        "fp32_rel_err": json.dumps(err_fmt, sort_keys=True),
        "generator": "tools/reference/make_fixtures.py; " + versions,
    }
    path = os.path.join(out_dir, name + ".safetensors")
    write_safetensors(path, tensors, meta)

    # self-check: read back, compare
    back, bmeta = read_safetensors(path)
    assert set(back) == set(tensors)
    for k in tensors:
        assert back[k].dtype == np.asarray(tensors[k]).dtype and np.array_equal(back[k], tensors[k]), k
    assert json.loads(bmeta["config"]) == cfg

    # report
    gmax = max(v for k, v in err.items() if k.startswith("grad."))
    gmax_k = max((k for k in err if k.startswith("grad.")), key=lambda k: err[k])
    gnorm_min = min(g64[k].norm().item() / math.sqrt(g64[k].numel()) for k in g64)
    line = "%-38s loss %.4f | fp32 rel err: loss %.1e logits %.1e grads max %.1e (%s)" % (
        name, loss64.item(), err["loss"], err["logits"], gmax, gmax_k.replace("grad.model.layers.", "L"))
    print(line)
    info = "    attn max-prob %.3f first-tok %.3f | min grad rms %.1e | fin-diff rel %.0e" % (
        np.mean(st["attn_maxp"]), np.mean(st["attn_first"]), gnorm_min, fd_rel)
    if "gate" in st:
        s = torch.cat(st["gate"])
        info += " | gate score mean %.3f std %.3f, in (0.05,0.95) %.0f%%" % (
            s.mean().item(), s.std().item(), 100 * ((s > 0.05) & (s < 0.95)).double().mean().item())
    print(info + extra)
    return {"name": name, "loss": loss64.item(), "err_loss": err["loss"], "err_logits": err["logits"],
            "err_grad_max": gmax, "size": os.path.getsize(path)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--skip-anchor", action="store_true")
    args = ap.parse_args()

    try:
        import transformers
        versions = "torch %s, transformers %s, numpy %s" % (torch.__version__, transformers.__version__,
                                                            np.__version__)
    except Exception:  # noqa: BLE001
        versions = "torch %s, numpy %s (no transformers)" % (torch.__version__, np.__version__)

    selftest()
    if not args.skip_anchor:
        run_anchor()
    else:
        print("!!! HF anchor skipped (--skip-anchor)")

    os.makedirs(args.out, exist_ok=True)
    total = 0
    for name, ov, gate in FIXTURES:
        if args.only and name not in args.only:
            continue
        seed = zlib.crc32(name.encode()) & 0xFFFF  # per-name: adding a fixture changes no other
        r = fixture(name, ov, gate, seed, args.out, versions)
        total += r["size"]
    print("wrote %.2f MB to %s" % (total / 1e6, args.out))


if __name__ == "__main__":
    main()
