"""The result of Model.analyze: `gattn analyze --out`'s JSON (docs/ANALYSIS.md) as typed objects,
per-head values as numpy arrays. `Analysis.json` keeps the document itself."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np


def _array(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


@dataclass
class GateStats:
    """What a layer's gate does, per gate head: mean |Y| into and out of it; for gates with scores
    the mean score, the fraction of scores below 0.1 and a histogram of the scores."""
    mean_abs_before: np.ndarray
    mean_abs_after: np.ndarray
    mean_score: Optional[np.ndarray] = None
    fraction_below_01: Optional[np.ndarray] = None
    layer_mean_score: Optional[float] = None
    histogram: Optional[dict] = None
    by_position: dict = field(default_factory=dict)  # {stat: {"first": [...], "rest": [...]}}

    @staticmethod
    def from_json(d: dict) -> "GateStats":
        scores = "mean_score" in d
        return GateStats(
            mean_abs_before=_array(d["mean_abs_before"]), mean_abs_after=_array(d["mean_abs_after"]),
            mean_score=_array(d["mean_score"]) if scores else None,
            fraction_below_01=_array(d["fraction_below_0.1"]) if scores else None,
            layer_mean_score=d.get("layer_mean_score"), histogram=d.get("histogram"),
            by_position=d.get("by_position", {}))


@dataclass
class LayerAnalysis:
    """One layer: kind "full_attention" or "linear_attention" (Gated DeltaNet: no attention
    fields); first-token attention per head over query positions >= 1 and >= from_position, and
    their means f_attn, f_attn_from_k; the largest |hidden state| and where (sequence, position,
    channel)."""
    layer: int
    kind: str
    max_abs_hidden: float
    max_at: tuple
    first_token_attention: Optional[np.ndarray] = None
    first_token_attention_from_k: Optional[np.ndarray] = None
    f_attn: Optional[float] = None
    f_attn_from_k: Optional[float] = None
    gate: Optional[GateStats] = None
    delta_net: Optional[dict] = None   # Gated DeltaNet gate, decay and beta statistics
    router: Optional[dict] = None      # mixture-of-experts routing statistics
    value_mean_abs: Optional[dict] = None  # mean |v| per key-value head: {"first", "rest"}
    projection_inputs: list = field(default_factory=list)

    @staticmethod
    def from_json(d: dict) -> "LayerAnalysis":
        at = d["max_at"]
        attention = d["kind"] == "full_attention"
        return LayerAnalysis(
            layer=d["layer"], kind=d["kind"], max_abs_hidden=d["max_abs_hidden"],
            max_at=(at["sequence"], at["position"], at["channel"]),
            first_token_attention=_array(d["first_token_attention"]) if attention else None,
            first_token_attention_from_k=(_array(d["first_token_attention_from_k"])
                                          if attention else None),
            f_attn=d.get("f_attn"), f_attn_from_k=d.get("f_attn_from_k"),
            gate=GateStats.from_json(d["gate"]) if "gate" in d else None,
            delta_net=d.get("delta_net"), router=d.get("router"),
            value_mean_abs=d.get("value_mean_abs"),
            projection_inputs=d.get("projection_inputs", []))


@dataclass
class Analysis:
    """The paper's measurements on held-out windows: loss; F-Attn (attention on the first token,
    mean over full-attention layers and heads) and over positions >= from_position; Sink^eps (the
    share of heads above sink_threshold); M-Act (max |hidden state| per layer, averaged); the mean
    gate score; the same under uniform attention in `uniform`; per layer `layers`; attention maps
    {(layer, head): [query, key] probabilities of the first sequence}."""
    sequences: int
    seq_len: int
    bos_at_position_0: bool
    from_position: int
    sink_threshold: float
    loss: float
    f_attn: float
    f_attn_from_k: float
    sink_fraction: float
    m_act: float
    attention_layers: int
    gate: str
    uniform: dict
    layers: list
    attention_maps: dict
    gate_score: Optional[float] = None
    delta_net_gate: Optional[float] = None
    moe: Optional[dict] = None
    interventions: list = field(default_factory=list)
    unmodified_loss: Optional[float] = None
    json: dict = field(default_factory=dict, repr=False)  # gattn analyze --out's document

    @staticmethod
    def from_json(d: dict) -> "Analysis":
        maps = {}
        for m in d.get("attention_maps", []):
            n = m["positions"]
            p = np.zeros((n, n))
            for query, row in enumerate(m["probabilities"]):
                p[query, :len(row)] = row
            maps[(m["layer"], m["head"])] = p
        return Analysis(
            sequences=d["sequences"], seq_len=d["seq_len"],
            bos_at_position_0=d["bos_at_position_0"], from_position=d["from_position"],
            sink_threshold=d["sink_threshold"], loss=d["loss"], f_attn=d["f_attn"],
            f_attn_from_k=d["f_attn_from_k"], sink_fraction=d["sink_fraction"], m_act=d["m_act"],
            attention_layers=d["attention_layers"], gate=d["gate"], uniform=d["uniform"],
            layers=[LayerAnalysis.from_json(layer) for layer in d["layers"]],
            attention_maps=maps, gate_score=d.get("gate_score"),
            delta_net_gate=d.get("delta_net_gate"), moe=d.get("moe"),
            interventions=d.get("interventions", []), unmodified_loss=d.get("unmodified_loss"),
            json=d)

    def first_token_attention(self) -> np.ndarray:
        """[layers, heads]: each head's attention on the first token (NaN for layers without
        attention)."""
        heads = max((len(l.first_token_attention) for l in self.layers
                     if l.first_token_attention is not None), default=0)
        out = np.full((len(self.layers), heads), np.nan)
        for i, layer in enumerate(self.layers):
            if layer.first_token_attention is not None:
                out[i] = layer.first_token_attention
        return out
