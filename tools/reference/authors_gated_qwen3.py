"""The paper authors' gated Qwen3 attention, written from their description (shared paper.md,
"Reference layouts for interoperability"): their remote code is not on PyPI.

q_proj holds the gate rows, grouped by KV group g: [queries of heads gG..gG+G-1 | their gates],
G = H / K; the gate block is G*d rows (elementwise) or G rows (headwise). The attention output of
each head is multiplied by sigmoid(gate) before o_proj (G1). Everything else is HF's Qwen3.

`gated_qwen3(config, elementwise)` returns a transformers Qwen3ForCausalLM whose attention modules
are replaced by this one, so save_pretrained writes the authors' tensor names and shapes.
"""
import torch
from torch import nn
from transformers import Qwen3ForCausalLM
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm, apply_rotary_pos_emb


class AuthorsGatedAttention(nn.Module):
    def __init__(self, config, elementwise):
        super().__init__()
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.group = self.heads // self.kv_heads
        self.gate_per_head = self.head_dim if elementwise else 1
        c, d = config.hidden_size, self.head_dim
        self.q_proj = nn.Linear(c, self.heads * (d + self.gate_per_head), bias=False)
        self.k_proj = nn.Linear(c, self.kv_heads * d, bias=False)
        self.v_proj = nn.Linear(c, self.kv_heads * d, bias=False)
        self.o_proj = nn.Linear(self.heads * d, c, bias=False)
        self.q_norm = Qwen3RMSNorm(d, eps=config.rms_norm_eps)
        self.k_norm = Qwen3RMSNorm(d, eps=config.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask=None, **kwargs):
        b, t, _ = hidden_states.shape
        H, K, G, d = self.heads, self.kv_heads, self.group, self.head_dim
        per_group = self.q_proj(hidden_states).view(b, t, K, -1)
        q, gate = torch.split(per_group, [G * d, G * self.gate_per_head], dim=-1)
        q = self.q_norm(q.reshape(b, t, H, d)).transpose(1, 2)
        gate = gate.reshape(b, t, H, self.gate_per_head)
        k = self.k_norm(self.k_proj(hidden_states).view(b, t, K, d)).transpose(1, 2)
        v = self.v_proj(hidden_states).view(b, t, K, d).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = k.repeat_interleave(G, dim=1)
        v = v.repeat_interleave(G, dim=1)
        scores = (q @ k.transpose(-1, -2)) * d**-0.5
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        probs = torch.softmax(scores.masked_fill(causal, float("-inf")).float(), dim=-1).to(q.dtype)
        y = (probs @ v).transpose(1, 2)  # [b, t, H, d]
        y = y * torch.sigmoid(gate)
        return self.o_proj(y.reshape(b, t, H * d)), None


def gated_qwen3(config, elementwise):
    config.elementwise_attn_output_gate = elementwise
    config.headwise_attn_output_gate = not elementwise
    model = Qwen3ForCausalLM(config)
    for layer in model.model.layers:
        layer.self_attn = AuthorsGatedAttention(config, elementwise)
    return model
