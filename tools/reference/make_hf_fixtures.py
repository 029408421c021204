"""Writes tests/fixtures/hf/<name>/: tiny random models saved by transformers itself
(save_pretrained) in each layout gattn's Hugging Face loader reads, and reference.safetensors beside
each: input_ids [1, T] and transformers' fp32 logits [T, V] of the model as loaded back from disk
(bf16 checkpoints: loaded, converted to fp32, run in fp32); finetune/ beside it: the loss of a
fine-tuning step on those ids and its gradient for every tensor, computed in float64, with the
relative error of transformers' fp32 computation of each (write_finetune_step);
generate.safetensors: 64 greedy tokens from those ids and the logits behind each.

Layouts: qwen3; the authors' gated qwen3 (authors_gated_qwen3.py: their code is not on PyPI);
qwen3_next and qwen3_5 with every layer full attention and dense MLPs; hybrids of both with Gated
DeltaNet (linear_attention) layers: qwen3_5 flat projections with r = 2 (fp32) and r = 1 (bf16,
tied, sharded), qwen3_next's per-key-head grouped in_proj_qkvz / in_proj_ba (fp32); qwen3_next with
mixture-of-experts MLPs (per-expert tensors, a shared expert and its gate), full-attention and
hybrid; Qwen3.5-MoE's language model (a hybrid whose experts are two fused 3-D tensors per
layer). Shapes: GQA with G = 2 (so
grouped and interleaved gate rows differ), head_dim 12 or 20 (a SIMD tail on 8-wide AVX2), partial
rotary, fp32 and bf16, one sharded checkpoint with an index.

Run through make_hf_fixtures.sh (a venv with the pinned requirements-hf.txt).
"""
import argparse
import contextlib
import json
import os
import shutil

import torch
import transformers
from safetensors.torch import load_file, save_file
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from transformers import (Qwen3_5Config, Qwen3_5ForConditionalGeneration, Qwen3_5MoeForCausalLM,
                          Qwen3_5MoeTextConfig, Qwen3Config, Qwen3ForCausalLM, Qwen3NextConfig,
                          Qwen3NextForCausalLM)

from authors_gated_qwen3 import gated_qwen3

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "fixtures", "hf")
SEQ = 11  # tokens per fixture

# The shape every fixture shares: GQA with G = 2, head_dim 12 (8-wide SIMD + a tail of 4).
SHAPE = dict(vocab_size=64, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=12, rms_norm_eps=1e-6,
             max_position_embeddings=256)


# Gated DeltaNet layers of the hybrids: two of them, then a full-attention one; head dims 12 and 10
# (SIMD tails), the convolution of width 4.
def hybrid_layers(key_heads, value_heads):
    return dict(num_hidden_layers=3,
                layer_types=["linear_attention", "linear_attention", "full_attention"],
                linear_num_key_heads=key_heads, linear_num_value_heads=value_heads,
                linear_key_head_dim=12, linear_value_head_dim=10, linear_conv_kernel_dim=4)


def randomise(model, generator, zero_centred_norms):
    """Weights large enough that every tensor moves the logits (HF's init leaves norms at 1 or 0)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # norm weights (and a Gated DeltaNet's A_log and dt_bias)
                plain = name.endswith("linear_attn.norm.weight")  # w, not 1 + w
                centre = 0.0 if zero_centred_norms and not plain else 1.0
                p.copy_(centre + 0.3 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(torch.randn(p.shape, generator=generator) / p.shape[-1] ** 0.5)


def qwen3(generator, **extra):
    config = Qwen3Config(**SHAPE, rope_theta=10000.0, tie_word_embeddings=extra.pop("tied", False),
                         **extra)
    model = Qwen3ForCausalLM(config)
    randomise(model, generator, False)
    return model


def authors(generator, elementwise):
    config = Qwen3Config(**SHAPE, rope_theta=10000.0, tie_word_embeddings=False)
    model = gated_qwen3(config, elementwise)
    randomise(model, generator, False)
    return model


def qwen3_next(generator, **extra):
    config = Qwen3NextConfig(**dict(dict(SHAPE, layer_types=["full_attention"] * 2), **extra),
                             tie_word_embeddings=False)
    model = Qwen3NextForCausalLM(config)
    randomise(model, generator, True)
    return model


def qwen3_5_moe(generator, hybrid):
    """Qwen3.5-MoE's language model alone (model_type qwen3_5_moe_text): every layer 4 experts,
    top 2, a shared expert; the experts saved as transformers holds them, two 3-D tensors."""
    text = dict(SHAPE, head_dim=20, tie_word_embeddings=False, num_experts=4, num_experts_per_tok=2,
                moe_intermediate_size=16, shared_expert_intermediate_size=24,
                rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                     partial_rotary_factor=0.5, mrope_section=[2, 2, 1],
                                     mrope_interleaved=True))
    text.update(hybrid)
    model = Qwen3_5MoeForCausalLM(Qwen3_5MoeTextConfig(**text))
    randomise(model, generator, True)
    return model


def qwen3_5(generator, hybrid=None, tied=False):
    text = dict(SHAPE, head_dim=20, layer_types=["full_attention"] * 2, tie_word_embeddings=tied,
                rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                     partial_rotary_factor=0.5, mrope_section=[2, 2, 1],
                                     mrope_interleaved=True))
    vision = dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=2, patch_size=2,
                  temporal_patch_size=1, out_hidden_size=SHAPE["hidden_size"],
                  num_position_embeddings=16)
    text.update(hybrid or {})
    config = Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=tied)
    model = Qwen3_5ForConditionalGeneration(config)
    randomise(model, generator, True)
    return model


def add_mtp_tensor(folder):
    """Real Qwen3.5 checkpoints carry multi-token-prediction tensors (mtp.*) that the LM ignores."""
    path = os.path.join(folder, "model.safetensors")
    tensors = load_file(path)
    tensors["mtp.fc.weight"] = torch.zeros(4, 4, dtype=next(iter(tensors.values())).dtype)
    save_file(tensors, path, metadata={"format": "pt"})


def eager_experts(config):
    """Mixtures of experts through transformers' eager loop over experts: its default grouped GEMM
    (torch._grouped_mm) takes no float64."""
    if getattr(config, "num_experts", 0):
        config._experts_implementation = "eager"


def per_expert(tensors):
    """transformers' fused expert parameters (mlp.experts.gate_up_proj [E, 2I, H], down_proj
    [E, H, I]) under the checkpoint's per-expert names (mlp.experts.{e}.gate_proj.weight, ...)."""
    out = {}
    for name, t in tensors.items():
        prefix, fused = name.rsplit(".", 1)[0], name.rsplit(".", 1)[-1]
        if prefix.endswith(".mlp.experts") and fused in ("gate_up_proj", "down_proj"):
            for e in range(t.shape[0]):
                if fused == "down_proj":
                    out[f"{prefix}.{e}.down_proj.weight"] = t[e]
                else:
                    gate, up = t[e].chunk(2, dim=0)
                    out[f"{prefix}.{e}.gate_proj.weight"] = gate
                    out[f"{prefix}.{e}.up_proj.weight"] = up
        else:
            out[name] = t
    return out


def reference_model(folder, cls, authors_elementwise=None):
    """transformers' model of the checkpoint as loaded back from the folder, in fp32."""
    if authors_elementwise is None:
        model = cls.from_pretrained(folder, dtype=torch.float32)
        eager_experts(model.config)
    else:  # the authors' layout: our module, their tensors
        config = Qwen3Config.from_pretrained(folder)
        model = gated_qwen3(config, authors_elementwise)
        model.load_state_dict({k: v.float() for k, v in checkpoint_tensors(folder).items()},
                              strict=True)
    return model.float()


def checkpoint_tensors(folder):
    state = {}
    for f in sorted(os.listdir(folder)):
        if f.endswith(".safetensors") and f not in ("reference.safetensors", "generate.safetensors"):
            state.update(load_file(os.path.join(folder, f)))
    return state


def reference_logits(folder, cls, ids, authors_elementwise=None):
    """transformers' fp32 logits of the checkpoint as loaded back from the folder, and for a model
    with experts its load-balancing loss (aux_loss, before router_aux_loss_coef) in float64."""
    model = reference_model(folder, cls, authors_elementwise).eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float().contiguous()
        if not getattr(model.config, "num_experts", 0) or not any(
                ".mlp.gate." in n for n, _ in model.named_parameters()):
            return logits, {}
        with Float64():
            aux = model.double()(input_ids=ids, output_router_logits=True).aux_loss
        return logits, {"router_aux_loss": aux.double().reshape(1)}


class Float64(TorchFunctionMode):
    """transformers computes RMSNorm, RoPE and softmax in fp32 by explicit casts (.float(),
    .to(torch.float32), softmax(dtype=torch.float32)) even in a float64 model; within this mode
    every such cast gives float64, and any other floating result is an error."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        wide = lambda a: torch.float64 if a is torch.float32 else a
        func = torch.Tensor.double if func is torch.Tensor.float else func
        out = func(*map(wide, args), **{k: wide(v) for k, v in (kwargs or {}).items()})
        for t in tree_flatten(out)[0]:
            assert not (torch.is_tensor(t) and t.is_floating_point() and t.dtype != torch.float64), func
        return out


def finetune_step(folder, cls, authors_elementwise, dtype):
    """transformers' loss (mean next-token cross-entropy over reference.safetensors' input_ids) and
    its gradient for every parameter, computed in dtype: float32 as a user of transformers would,
    or float64 (the model converted with .double(), every fp32 cast and the RoPE inverse
    frequencies in float64 too)."""
    ids = load_file(os.path.join(folder, "reference.safetensors"))["input_ids"]
    model = reference_model(folder, cls, authors_elementwise).to(dtype).train()
    with Float64() if dtype == torch.float64 else contextlib.nullcontext():
        if dtype == torch.float64:  # RoPE inverse frequencies (HF builds them in fp32) from the config
            ropes = [m for m in model.modules() if getattr(m, "rope_type", None) == "default"]
            assert ropes, f"{folder}: no default RoPE"
            for m in ropes:
                m.inv_freq = m.compute_default_rope_parameters(m.config)[0]
        logits = model(input_ids=ids).logits[0].to(dtype)
        loss = torch.nn.functional.cross_entropy(logits[:-1], ids[0, 1:])
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


def write_finetune_step(folder, cls, authors_elementwise=None):
    """folder/finetune/: the float64 loss and gradients of finetune_step for every checkpoint tensor
    of the language model, the gradients rounded to fp32 under the checkpoint's own names
    (model.safetensors: the loader's layout conversion reads it); reference.safetensors: the loss
    (F64) and, in its metadata, fp32_rel_err: ||fp32 - float64|| / ||float64|| of the loss and of
    every gradient, how far transformers' fp32 computation alone moves each."""
    loss32, grads32 = finetune_step(folder, cls, authors_elementwise, torch.float32)
    loss64, grads64 = finetune_step(folder, cls, authors_elementwise, torch.float64)
    saved = set(checkpoint_tensors(folder))
    if any(".mlp.experts.0." in name for name in saved):  # experts saved one by one
        grads32, grads64 = per_expert(grads32), per_expert(grads64)
    grads64 = {name: g for name, g in grads64.items() if name in saved}
    missing = sorted(n for n in saved if n not in grads64 and not n.startswith(("mtp.", "model.visual.")))
    assert not missing, f"{folder}: no gradient for {missing}"

    def rel(a32, a64):
        return ((a32.double() - a64).norm() / a64.norm()).item()

    err = {name: rel(grads32[name], g) for name, g in grads64.items()}
    err["loss"] = rel(loss32, loss64)
    out = os.path.join(folder, "finetune")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    save_file({name: g.float().contiguous() for name, g in grads64.items()},
              os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    save_file({"loss": loss64.reshape(1)}, os.path.join(out, "reference.safetensors"),
              metadata={"transformers_version": transformers.__version__,
                        "torch_version": torch.__version__,
                        "fp32_rel_err": json.dumps({k: float("%.3e" % v) for k, v in err.items()},
                                                   sort_keys=True)})
    worst = max(err, key=err.get)
    print(f"{os.path.basename(folder)}: finetune loss {loss64.item():.6f}, {len(grads64)} gradients,"
          f" worst fp32 rel. L2 {err[worst]:.2e} ({worst})")


def write(name, model, cls, generator, dtype, authors_elementwise=None, shard=None,
          after_save=None):
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    model = model.to(dtype)
    kwargs = {"max_shard_size": shard} if shard else {}
    model.save_pretrained(folder, **kwargs)
    if after_save:
        after_save(folder)
    vocab = SHAPE["vocab_size"]
    ids = torch.randint(0, vocab, (1, SEQ), generator=generator)
    logits, extra = reference_logits(folder, cls, ids, authors_elementwise)
    save_file({"input_ids": ids.to(torch.int64), "logits": logits, **extra},
              os.path.join(folder, "reference.safetensors"),
              metadata={"transformers_version": transformers.__version__,
                        "torch_version": torch.__version__,
                        "weights_dtype": str(dtype).replace("torch.", "")})
    write_finetune_step(folder, cls, authors_elementwise)
    write_generation(folder, cls, authors_elementwise)
    files = sorted(os.listdir(folder))
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    print(f"{name}: {size} bytes, files {files}, logits std {logits.std():.3f}")


FIXTURES = {
    "qwen3_f32": lambda g: write("qwen3_f32", qwen3(g), Qwen3ForCausalLM, g, torch.float32),
    "qwen3_bf16_sharded": lambda g: write("qwen3_bf16_sharded", qwen3(g, tied=True),
                                          Qwen3ForCausalLM, g, torch.bfloat16, shard="8KB"),
    "authors_elementwise_f32": lambda g: write("authors_elementwise_f32", authors(g, True), None,
                                               g, torch.float32, authors_elementwise=True),
    "authors_headwise_bf16": lambda g: write("authors_headwise_bf16", authors(g, False), None, g,
                                             torch.bfloat16, authors_elementwise=False),
    "qwen3_next_f32": lambda g: write(
        "qwen3_next_f32", qwen3_next(g, partial_rotary_factor=0.5, num_experts=4,
                                     mlp_only_layers=[0, 1]),
        Qwen3NextForCausalLM, g, torch.float32),
    "qwen3_next_bf16": lambda g: write(
        "qwen3_next_bf16", qwen3_next(g, num_experts=0, head_dim=16), Qwen3NextForCausalLM, g,
        torch.bfloat16),
    "qwen3_5_f32": lambda g: write("qwen3_5_f32", qwen3_5(g), Qwen3_5ForConditionalGeneration,
                                   g, torch.float32, after_save=add_mtp_tensor),
    "qwen3_5_hybrid_f32": lambda g: write(
        "qwen3_5_hybrid_f32", qwen3_5(g, hybrid_layers(2, 4)), Qwen3_5ForConditionalGeneration, g,
        torch.float32, after_save=add_mtp_tensor),
    "qwen3_5_hybrid_tied_bf16_sharded": lambda g: write(
        "qwen3_5_hybrid_tied_bf16_sharded", qwen3_5(g, hybrid_layers(2, 2), tied=True),
        Qwen3_5ForConditionalGeneration, g, torch.bfloat16, shard="8KB"),
    "qwen3_next_hybrid_f32": lambda g: write(
        "qwen3_next_hybrid_f32",
        qwen3_next(g, num_experts=0, partial_rotary_factor=0.5, **hybrid_layers(2, 4)),
        Qwen3NextForCausalLM, g, torch.float32),
    # Mixtures of experts: both layers (4 experts, top 2, a shared expert); and a hybrid whose
    # DeltaNet layer 0 and attention layer 2 have experts (6, top 2) and DeltaNet layer 1 a dense MLP.
    "qwen3_next_moe_f32": lambda g: write(
        "qwen3_next_moe_f32",
        qwen3_next(g, partial_rotary_factor=0.5, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=16, shared_expert_intermediate_size=24,
                   mlp_only_layers=[]),
        Qwen3NextForCausalLM, g, torch.float32),
    "qwen3_next_moe_hybrid_f32": lambda g: write(
        "qwen3_next_moe_hybrid_f32",
        qwen3_next(g, partial_rotary_factor=0.5, num_experts=6, num_experts_per_tok=2,
                   moe_intermediate_size=16, shared_expert_intermediate_size=24,
                   mlp_only_layers=[1], **hybrid_layers(2, 4)),
        Qwen3NextForCausalLM, g, torch.float32),
    "qwen3_5_moe_hybrid_f32": lambda g: write(
        "qwen3_5_moe_hybrid_f32", qwen3_5_moe(g, hybrid_layers(2, 4)), Qwen3_5MoeForCausalLM, g,
        torch.float32),
}


def finetune_only(name):
    """Rewrites folder/finetune/ of an existing fixture (its model files untouched)."""
    folder = os.path.join(OUT, name)
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    classes = {"qwen3": Qwen3ForCausalLM, "qwen3_next": Qwen3NextForCausalLM,
               "qwen3_5": Qwen3_5ForConditionalGeneration}
    authors_elementwise = None
    if config.get("elementwise_attn_output_gate") or config.get("headwise_attn_output_gate"):
        authors_elementwise = bool(config.get("elementwise_attn_output_gate"))
    write_finetune_step(folder, classes[config["model_type"]], authors_elementwise)


GENERATED = 64  # greedy tokens in generate.safetensors


def write_generation(folder, cls, authors_elementwise=None):
    """folder/generate.safetensors: transformers' greedy continuation of reference.safetensors'
    input_ids (GENERATED tokens) and the logits [GENERATED, V] that chose each token, every one
    from a full forward over the sequence so far. For transformers' own classes the tokens are
    checked against model.generate (KV cache, greedy); the authors' module has no cache.
    Also, for those classes: logits_f64, the same logits from the model in float64 (rounded to
    fp32 to store), and fp32_err [GENERATED]: how far transformers' own fp32 logits of each step
    (the full forward's and its cached decode's, the larger) are from them (relative L2): a step
    where fp32 itself strays far (a near-cancellation inside the model) is told from a bug."""
    ids = load_file(os.path.join(folder, "reference.safetensors"))["input_ids"]
    model = reference_model(folder, cls, authors_elementwise).eval()
    sequence, step_logits = ids, []
    with torch.no_grad():
        for _ in range(GENERATED):
            logits = model(input_ids=sequence).logits[0, -1].float()
            step_logits.append(logits)
            sequence = torch.cat([sequence, logits.argmax().reshape(1, 1)], dim=1)
        tokens = sequence[0, ids.shape[1]:]
        out = {"tokens": tokens.to(torch.int64), "logits": torch.stack(step_logits).contiguous()}
        if authors_elementwise is None:
            generated = model.generate(ids, max_new_tokens=GENERATED, min_new_tokens=GENERATED,
                                       do_sample=False, num_beams=1, eos_token_id=None,
                                       pad_token_id=0)
            assert torch.equal(generated[0, ids.shape[1]:], tokens), f"{folder}: generate differs"
            out.update(exact_logits(folder, cls, ids, tokens, step_logits, model))
    save_file(out, os.path.join(folder, "generate.safetensors"),
              metadata={"transformers_version": transformers.__version__,
                        "torch_version": torch.__version__})
    print(f"{os.path.basename(folder)}: {GENERATED} greedy tokens")


def exact_logits(folder, cls, ids, tokens, step_logits, model):
    """logits_f64 and fp32_err of write_generation."""
    exact = cls.from_pretrained(folder, dtype=torch.float64).eval()
    eager_experts(exact.config)
    rel = lambda a, b: ((a.double() - b).norm() / b.norm()).item()
    cached = model(input_ids=ids, use_cache=True)
    cache, decoded = cached.past_key_values, cached.logits[0, -1]
    f64, err = [], []
    for step in range(len(tokens)):
        full = torch.cat([ids, tokens[:step].reshape(1, -1)], dim=1)
        truth = exact(input_ids=full).logits[0, -1]
        f64.append(truth.float())
        err.append(max(rel(step_logits[step], truth), rel(decoded, truth)))
        step_out = model(input_ids=tokens[step].reshape(1, 1), past_key_values=cache, use_cache=True)
        cache, decoded = step_out.past_key_values, step_out.logits[0, -1]
    return {"logits_f64": torch.stack(f64).contiguous(), "fp32_err": torch.tensor(err, dtype=torch.float32)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=list(FIXTURES))
    parser.add_argument("--finetune-only", action="store_true",
                        help="only rewrite the finetune/ references of the existing fixtures")
    args = parser.parse_args()
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    for i, name in enumerate(FIXTURES):
        if name in args.only:
            if args.finetune_only:
                finetune_only(name)
            else:
                FIXTURES[name](torch.Generator().manual_seed(1000 + i))


if __name__ == "__main__":
    main()
