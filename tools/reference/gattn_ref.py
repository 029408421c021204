"""Independent PyTorch reference for the gattn model (docs/MODEL.md).

Written from the math in docs/MODEL.md only. Pure torch, dtype-generic: the dtype of the
parameter tensors decides the compute dtype (float64 for the golden reference, float32 for the
"how much does fp32 alone move things" yardstick). Parameters are a dict
{MODEL.md tensor name: tensor}; gradients come from torch autograd.

Activation layout inside this file: tokens as [B, T, ...]; per-head tensors as [B, T, nh, d].
"""
import json
import math

import torch

GATE_DEFAULTS = {
    "position": "none",
    "kind": "input_dependent",
    "granularity": "elementwise",
    "sharing": "head_specific",
    "activation": "sigmoid",
    "mode": "multiplicative",
    "after_qk_norm": False,
}

CONFIG_DEFAULTS = {
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "use_qk_norm": True,
    "max_position_embeddings": 4096,
    "initializer_range": 0.02,
    "sandwich_norm": False,
    "block_output_clip": None,
    "partial_rotary_factor": 1.0,
}

REQUIRED = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"]


class Cfg:
    """Resolved config (defaults applied, a light validity check; the C++ does the full one)."""

    def __init__(self, cfg):
        if isinstance(cfg, str):
            cfg = json.loads(cfg)
        c = dict(CONFIG_DEFAULTS)
        c.update(cfg)
        for k in REQUIRED:
            assert k in c, "missing " + k
        self.V = c["vocab_size"]
        self.C = c["hidden_size"]
        self.L = c["num_hidden_layers"]
        self.H = c["num_attention_heads"]
        self.K = c.get("num_key_value_heads", self.H)
        assert self.H % self.K == 0
        self.G = self.H // self.K
        if "head_dim" in c:
            self.d = c["head_dim"]
        else:
            assert self.C % self.H == 0
            self.d = self.C // self.H
        self.I = c["intermediate_size"]
        self.theta = float(c["rope_theta"])
        rf = float(c["partial_rotary_factor"])
        R = self.d * rf
        assert 0 < rf <= 1 and R == int(R) and int(R) % 2 == 0, "d * partial_rotary_factor must be an even integer"
        self.R = int(R)
        self.eps = float(c["rms_norm_eps"])
        self.tied = bool(c["tie_word_embeddings"])
        self.qk_norm = bool(c["use_qk_norm"])
        self.max_pos = int(c["max_position_embeddings"])
        self.sandwich = bool(c["sandwich_norm"])
        self.clip = c["block_output_clip"]
        g = dict(GATE_DEFAULTS)
        g.update(c.get("gate", {}))
        self.gate = g
        self.pos = g["position"]
        # Gated DeltaNet layers (layer_types "linear_attention"; MODEL.md "Gated DeltaNet")
        self.layer_types = list(c.get("layer_types", ["full_attention"] * self.L))
        assert len(self.layer_types) == self.L
        assert all(t in ("full_attention", "linear_attention") for t in self.layer_types)
        self.lin_Hk = c.get("linear_num_key_heads", 16)
        self.lin_Hv = c.get("linear_num_value_heads", 32)
        self.lin_dk = c.get("linear_key_head_dim", 128)
        self.lin_dv = c.get("linear_value_head_dim", 128)
        self.lin_conv = c.get("linear_conv_kernel_dim", 4)
        assert self.lin_Hv % self.lin_Hk == 0

    def linear(self, l):
        return self.layer_types[l] == "linear_attention"

    def gate_heads(self):
        """(nh, width) of the tensor gated at this position."""
        p = self.pos
        if p in ("sdpa", "query"):
            return self.H, self.d
        if p in ("value", "key"):
            return self.K, self.d
        if p == "dense":
            return 1, self.C
        raise ValueError(p)

    def gate_S(self):
        nh, w = self.gate_heads()
        return nh * w if self.gate["granularity"] == "elementwise" else nh


def param_shapes(cfg):
    """Ordered dict name -> shape, exactly the MODEL.md tensor list for this config."""
    c = cfg if isinstance(cfg, Cfg) else Cfg(cfg)
    s = {"model.embed_tokens.weight": (c.V, c.C)}
    kind = c.gate["kind"]
    for l in range(c.L):
        p = "model.layers.%d." % l
        s[p + "input_layernorm.weight"] = (c.C,)
        if c.linear(l):
            delta_net_shapes(c, p + "linear_attn.", s)
            if c.sandwich:
                s[p + "attn_output_norm.weight"] = (c.C,)
            mlp_shapes(c, p, s)
            continue
        s[p + "self_attn.q_proj.weight"] = (c.H * c.d, c.C)
        s[p + "self_attn.k_proj.weight"] = (c.K * c.d, c.C)
        s[p + "self_attn.v_proj.weight"] = (c.K * c.d, c.C)
        if c.pos != "none":
            if kind in ("input_dependent", "ns_sigmoid"):
                s[p + "self_attn.%s_gate.weight" % c.pos] = (c.gate_S(), c.C)
            elif kind == "input_independent":
                s[p + "self_attn.%s_gate.logit" % c.pos] = (c.gate_S(),)
            elif kind == "head_rmsnorm":
                s[p + "self_attn.sdpa_norm.weight"] = (c.H * c.d,)
        if c.qk_norm:
            s[p + "self_attn.q_norm.weight"] = (c.d,)
            s[p + "self_attn.k_norm.weight"] = (c.d,)
        s[p + "self_attn.o_proj.weight"] = (c.C, c.H * c.d)
        if c.sandwich:
            s[p + "attn_output_norm.weight"] = (c.C,)
        mlp_shapes(c, p, s)
    s["model.norm.weight"] = (c.C,)
    if not c.tied:
        s["lm_head.weight"] = (c.V, c.C)
    return s


def mlp_shapes(c, p, s):
    s[p + "post_attention_layernorm.weight"] = (c.C,)
    s[p + "mlp.gate_proj.weight"] = (c.I, c.C)
    s[p + "mlp.up_proj.weight"] = (c.I, c.C)
    s[p + "mlp.down_proj.weight"] = (c.C, c.I)
    if c.sandwich:
        s[p + "mlp_output_norm.weight"] = (c.C,)


def delta_net_shapes(c, p, s):
    """A Gated DeltaNet layer's tensors (Qwen3.5's names and shapes)."""
    kw, vw = c.lin_Hk * c.lin_dk, c.lin_Hv * c.lin_dv
    s[p + "in_proj_qkv.weight"] = (2 * kw + vw, c.C)
    s[p + "in_proj_z.weight"] = (vw, c.C)
    s[p + "in_proj_b.weight"] = (c.lin_Hv, c.C)
    s[p + "in_proj_a.weight"] = (c.lin_Hv, c.C)
    s[p + "conv1d.weight"] = (2 * kw + vw, 1, c.lin_conv)
    s[p + "dt_bias"] = (c.lin_Hv,)
    s[p + "A_log"] = (c.lin_Hv,)
    s[p + "norm.weight"] = (c.lin_dv,)
    s[p + "out_proj.weight"] = (c.C, vw)


# ----------------------------------------------------------------------------- primitives

def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def silu(x):
    return x * torch.sigmoid(x)


def linear(x, W):
    return x @ W.t()


def rope(x, R, theta):
    """x [B, T, nh, d]; HF rotate-half on channels [0, R), channels >= R pass through."""
    T = x.shape[1]
    half = R // 2
    i = torch.arange(half, dtype=torch.float64)
    inv_freq = theta ** (-2.0 * i / R)  # float64 always, then cast
    t = torch.arange(T, dtype=torch.float64)
    ang = t[:, None] * inv_freq[None, :]  # [T, half]
    cos = torch.cos(ang).to(x.dtype)[None, :, None, :]
    sin = torch.sin(ang).to(x.dtype)[None, :, None, :]
    x1 = x[..., :half]
    x2 = x[..., half:R]
    rest = x[..., R:]
    y1 = x1 * cos - x2 * sin
    y2 = x2 * cos + x1 * sin
    return torch.cat([y1, y2, rest], dim=-1)


def causal_attention(q, k, v, G, stats=None):
    """q [B,T,H,d], k/v [B,T,K,d]; query head h uses kv head h // G. Returns [B,T,H,d]."""
    B, T, H, d = q.shape
    qh = q.permute(0, 2, 1, 3)  # [B,H,T,d]
    kh = k.permute(0, 2, 1, 3).repeat_interleave(G, dim=1)
    vh = v.permute(0, 2, 1, 3).repeat_interleave(G, dim=1)
    scores = qh @ kh.transpose(-1, -2) / math.sqrt(d)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    if stats is not None:
        pd = p.detach()
        stats.setdefault("attn_maxp", []).append(pd.max(-1).values[..., 1:].mean().item())
        stats.setdefault("attn_first", []).append(pd[..., 1:, 0].mean().item())
    y = p @ vh
    return y.permute(0, 2, 1, 3)


def _activation(z, act):
    if act == "sigmoid":
        return torch.sigmoid(z)
    if act == "silu":
        return silu(z)
    if act == "identity":
        return z
    raise ValueError(act)


def apply_gate(c, P, prefix, Y, X, stats=None):
    """Gate the tensor Y [B,T,nh,w] (dense: nh = 1, w = C) with gate input X [B,T,C]."""
    g = c.gate
    kind = g["kind"]
    B, T, nh, w = Y.shape
    if kind == "silu_only":
        return silu(Y)
    if kind == "head_rmsnorm":
        W = P[prefix + "self_attn.sdpa_norm.weight"].reshape(nh, w)
        return rmsnorm(Y, W, c.eps)
    name = prefix + "self_attn.%s_gate." % c.pos
    if kind in ("input_dependent", "ns_sigmoid"):
        z = linear(X, P[name + "weight"])  # [B,T,S]
    elif kind == "input_independent":
        z = P[name + "logit"].expand(B, T, -1)
    else:
        raise ValueError(kind)
    if kind == "ns_sigmoid":
        s = 0.5 + 0.5 * torch.sigmoid(z)
    else:
        s = _activation(z, g["activation"])
    if g["granularity"] == "elementwise":
        s = s.reshape(B, T, nh, w)
    else:
        s = s.reshape(B, T, nh, 1)
    if g["sharing"] == "head_shared":
        s = s.mean(dim=2, keepdim=True)  # broadcast back over heads
    if stats is not None:
        sd = s.detach()
        stats.setdefault("gate", []).append(sd.reshape(-1))
    if g["mode"] == "multiplicative":
        return Y * s
    if g["mode"] == "additive":
        return Y + s
    raise ValueError(g["mode"])


def delta_net(c, P, p, X):
    """MODEL.md's Gated DeltaNet on X = input_layernorm(in) [B,T,C], token by token (the
    recurrence itself, no chunking), in the dtype of P. Returns out_proj(y) [B,T,C]."""
    B, T, _ = X.shape
    Hk, Hv, dk, dv, K = c.lin_Hk, c.lin_Hv, c.lin_dk, c.lin_dv, c.lin_conv
    kw = Hk * dk
    qkv = linear(X, P[p + "in_proj_qkv.weight"])  # [B,T,2kw+vw]
    z = linear(X, P[p + "in_proj_z.weight"]).reshape(B, T, Hv, dv)
    b = linear(X, P[p + "in_proj_b.weight"])  # [B,T,Hv]
    a = linear(X, P[p + "in_proj_a.weight"])
    w = P[p + "conv1d.weight"][:, 0, :]  # [ch, K]: out[t, c] = sum_j w[c, j] qkv[t - K + 1 + j, c]
    padded = torch.cat([torch.zeros(B, K - 1, qkv.shape[2], dtype=qkv.dtype), qkv], dim=1)
    conv = sum(padded[:, j:j + T, :] * w[:, j] for j in range(K))
    act = silu(conv)
    q = act[..., :kw].reshape(B, T, Hk, dk)
    k = act[..., kw:2 * kw].reshape(B, T, Hk, dk)
    v = act[..., 2 * kw:].reshape(B, T, Hv, dv)
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) / math.sqrt(dk)
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    g = -torch.exp(P[p + "A_log"]) * torch.nn.functional.softplus(a + P[p + "dt_bias"])  # [B,T,Hv]
    beta = torch.sigmoid(b)
    r = Hv // Hk  # value head h reads key head h // r
    q = q.repeat_interleave(r, dim=2)
    k = k.repeat_interleave(r, dim=2)
    S = torch.zeros(B, Hv, dk, dv, dtype=X.dtype)
    outs = []
    for t in range(T):
        S = S * torch.exp(g[:, t])[..., None, None]
        kt, vt = k[:, t], v[:, t]  # [B,Hv,dk], [B,Hv,dv]
        pred = torch.einsum("bhkv,bhk->bhv", S, kt)
        S = S + torch.einsum("bhk,bhv->bhkv", kt, beta[:, t][..., None] * (vt - pred))
        outs.append(torch.einsum("bhkv,bhk->bhv", S, q[:, t]))
    o = torch.stack(outs, dim=1)  # [B,T,Hv,dv]
    y = rmsnorm(o, P[p + "norm.weight"], c.eps) * silu(z)
    return linear(y.reshape(B, T, Hv * dv), P[p + "out_proj.weight"])


# ----------------------------------------------------------------------------- model

def forward(cfg, P, ids, stats=None):
    """Logits [B,T,V] in the dtype of P."""
    c = cfg if isinstance(cfg, Cfg) else Cfg(cfg)
    B, T = ids.shape
    assert T <= c.max_pos
    E = P["model.embed_tokens.weight"]
    h = E[ids]  # [B,T,C]
    pos = c.pos
    after = bool(c.gate["after_qk_norm"])
    for l in range(c.L):
        p = "model.layers.%d." % l
        X = rmsnorm(h, P[p + "input_layernorm.weight"], c.eps)
        if c.linear(l):
            h = block_output(c, P, p, h, delta_net(c, P, p + "linear_attn.", X), stats)
            h = mlp_block(c, P, p, h, stats)
            continue
        q = linear(X, P[p + "self_attn.q_proj.weight"]).reshape(B, T, c.H, c.d)
        k = linear(X, P[p + "self_attn.k_proj.weight"]).reshape(B, T, c.K, c.d)
        v = linear(X, P[p + "self_attn.v_proj.weight"]).reshape(B, T, c.K, c.d)
        if pos == "query" and not after:
            q = apply_gate(c, P, p, q, X, stats)
        if pos == "key" and not after:
            k = apply_gate(c, P, p, k, X, stats)
        if pos == "value":
            v = apply_gate(c, P, p, v, X, stats)
        if c.qk_norm:
            q = rmsnorm(q, P[p + "self_attn.q_norm.weight"], c.eps)
            k = rmsnorm(k, P[p + "self_attn.k_norm.weight"], c.eps)
        q = rope(q, c.R, c.theta)
        k = rope(k, c.R, c.theta)
        if pos == "query" and after:
            q = apply_gate(c, P, p, q, X, stats)
        if pos == "key" and after:
            k = apply_gate(c, P, p, k, X, stats)
        y = causal_attention(q, k, v, c.G, stats)  # [B,T,H,d]
        if pos == "sdpa":
            y = apply_gate(c, P, p, y, X, stats)
        a = linear(y.reshape(B, T, c.H * c.d), P[p + "self_attn.o_proj.weight"])
        if pos == "dense":
            a = apply_gate(c, P, p, a.reshape(B, T, 1, c.C), X, stats).reshape(B, T, c.C)
        h = block_output(c, P, p, h, a, stats)
        h = mlp_block(c, P, p, h, stats)
    W = E if c.tied else P["lm_head.weight"]
    return linear(rmsnorm(h, P["model.norm.weight"], c.eps), W)


def block_output(c, P, p, h, a, stats, norm="attn_output_norm.weight"):
    """h + a, a through the sandwich norm and the clip when the config has them."""
    if c.sandwich:
        a = rmsnorm(a, P[p + norm], c.eps)
    if stats is not None:
        stats.setdefault("block_out", []).append(a.detach().reshape(-1))
    if c.clip is not None:
        a = torch.clamp(a, -c.clip, c.clip)
    return h + a


def mlp_block(c, P, p, h, stats):
    X2 = rmsnorm(h, P[p + "post_attention_layernorm.weight"], c.eps)
    m = linear(silu(linear(X2, P[p + "mlp.gate_proj.weight"])) * linear(X2, P[p + "mlp.up_proj.weight"]),
               P[p + "mlp.down_proj.weight"])
    return block_output(c, P, p, h, m, stats, "mlp_output_norm.weight")


def loss_fn(logits, targets):
    """Mean over positions with target >= 0 of logsumexp(logits) - logits[target]."""
    valid = targets >= 0
    lse = torch.logsumexp(logits, dim=-1)
    tgt = logits.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    nll = (lse - tgt) * valid.to(logits.dtype)
    return nll.sum() / valid.sum().to(logits.dtype)


def run(cfg, P, ids, targets, stats=None):
    """Forward + backward. P: dict of leaf tensors (any float dtype). Returns logits, loss, grads."""
    Pg = {k: v.detach().clone().requires_grad_(True) for k, v in P.items()}
    logits = forward(cfg, Pg, ids, stats)
    loss = loss_fn(logits, targets)
    names = list(Pg.keys())
    grads = torch.autograd.grad(loss, [Pg[n] for n in names])
    return logits.detach(), loss.detach(), {n: g.detach() for n, g in zip(names, grads)}
