"""The gattn model in PyTorch for speed comparisons: a fair eager implementation (fused q/k/v/gate
and gate/up projections, F.rms_norm, scaled_dot_product_attention with is_causal and GQA, fused
cross-entropy) of the configs in docs/MODEL.md, for the gates the benchmark uses (none, G1
elementwise or headwise sigmoid). Not a reference: tools/reference/gattn_ref.py is that."""
import math

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        C, H, K, d, I = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["intermediate_size"]
        gate = c.get("gate", {}).get("position", "none")
        self.H, self.K, self.d, self.eps = H, K, d, c.get("rms_norm_eps", 1e-6)
        self.gate_scores = 0 if gate == "none" else (H if c["gate"].get("granularity") == "headwise" else H * d)
        self.input_norm = torch.nn.Parameter(torch.ones(C))
        self.qkvg = torch.nn.Linear(C, H * d + 2 * K * d + self.gate_scores, bias=False)
        self.q_norm = torch.nn.Parameter(torch.ones(d))
        self.k_norm = torch.nn.Parameter(torch.ones(d))
        self.o_proj = torch.nn.Linear(H * d, C, bias=False)
        self.post_norm = torch.nn.Parameter(torch.ones(C))
        self.gate_up = torch.nn.Linear(C, 2 * I, bias=False)
        self.down = torch.nn.Linear(I, C, bias=False)

    def forward(self, h, cos, sin):
        B, T, C = h.shape
        H, K, d = self.H, self.K, self.d
        x = F.rms_norm(h, (C,), self.input_norm, self.eps)
        q, k, v, z = self.qkvg(x).split([H * d, K * d, K * d, self.gate_scores], dim=-1)
        q = F.rms_norm(q.view(B, T, H, d), (d,), self.q_norm, self.eps).transpose(1, 2)
        k = F.rms_norm(k.view(B, T, K, d), (d,), self.k_norm, self.eps).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        v = v.view(B, T, K, d).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=K != H)
        y = y.transpose(1, 2)  # B, T, H, d
        if self.gate_scores:
            y = y * torch.sigmoid(z.view(B, T, H, -1))
        h = h + self.o_proj(y.reshape(B, T, H * d))
        g, u = self.gate_up(F.rms_norm(h, (C,), self.post_norm, self.eps)).chunk(2, dim=-1)
        return h + self.down(F.silu(g) * u)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(torch.nn.Module):
    def __init__(self, c, seq_len):
        super().__init__()
        assert c.get("partial_rotary_factor", 1.0) == 1.0 and c.get("tie_word_embeddings", False)
        self.embed = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = torch.nn.Parameter(torch.ones(c["hidden_size"]))
        self.eps = c.get("rms_norm_eps", 1e-6)
        d = c["head_dim"]
        inv_freq = c.get("rope_theta", 10000.0) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=c.get("initializer_range", 0.02))

    def forward(self, ids, targets):
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h, self.cos, self.sin)
        logits = F.linear(F.rms_norm(h, (h.shape[-1],), self.norm, self.eps), self.embed.weight)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-1)
