#include "model/layout.h"

#include "model/gate_site.h"
#include "util/error.h"

namespace gattn {

std::string gate_tensor_prefix(GatePosition position) {
  return std::string(gate_position_info(position).name) + "_gate";
}

int64_t ParamLayout::add(std::string name, std::vector<int64_t> shape, Init init,
                         std::string component) {
  TensorSpec t{std::move(name), std::move(shape), total_, 1, init, std::move(component)};
  for (int64_t d : t.shape) t.numel *= d;
  total_ += t.numel;
  tensors_.push_back(std::move(t));
  GATTN_ASSERT(by_name_.emplace(tensors_.back().name, tensors_.size() - 1).second,
               "tensor name ", tensors_.back().name, " twice in the layout");
  return tensors_.back().offset;
}

ParamLayout::ParamLayout(const Config& c) {
  const int64_t C = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  const int64_t q = c.q_dim(), kv = c.kv_dim(), d = c.head_dim, scores = gate_site(c).scores;
  const GateConfig& g = c.gate;
  attn_proj_rows = int(q + 2 * kv + (g.has_weight() ? scores : 0));

  embed = add("model.embed_tokens.weight", {V, C}, Init::normal, "embedding");
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string gate = g.enabled() ? p + "self_attn." + gate_tensor_prefix(g.position) : "";
    LayerOffsets o{};
    o.input_norm = add(p + "input_layernorm.weight", {C}, Init::ones, "norms");
    o.attn_proj = add(p + "self_attn.q_proj.weight", {q, C}, Init::normal, "attention q/k/v/o");
    add(p + "self_attn.k_proj.weight", {kv, C}, Init::normal, "attention q/k/v/o");
    add(p + "self_attn.v_proj.weight", {kv, C}, Init::normal, "attention q/k/v/o");
    if (g.has_weight())
      add(gate + ".weight", {scores, C}, g.identity_init ? Init::zeros : Init::normal, "gate");
    if (g.has_logit()) o.gate_logit = add(gate + ".logit", {scores}, Init::zeros, "gate");
    if (c.use_qk_norm) {
      o.q_norm = add(p + "self_attn.q_norm.weight", {d}, Init::ones, "qk_norm");
      o.k_norm = add(p + "self_attn.k_norm.weight", {d}, Init::ones, "qk_norm");
    }
    if (g.kind == GateKind::head_rmsnorm && g.enabled())
      o.sdpa_norm = add(p + "self_attn.sdpa_norm.weight", {q}, Init::ones, "gate");
    o.o_proj = add(p + "self_attn.o_proj.weight", {C, q}, Init::normal, "attention q/k/v/o");
    if (c.sandwich_norm)
      o.attn_output_norm = add(p + "attn_output_norm.weight", {C}, Init::ones, "norms");
    o.post_attn_norm = add(p + "post_attention_layernorm.weight", {C}, Init::ones, "norms");
    o.mlp_gate_up = add(p + "mlp.gate_proj.weight", {I, C}, Init::normal, "mlp");
    add(p + "mlp.up_proj.weight", {I, C}, Init::normal, "mlp");
    o.mlp_down = add(p + "mlp.down_proj.weight", {C, I}, Init::normal, "mlp");
    if (c.sandwich_norm)
      o.mlp_output_norm = add(p + "mlp_output_norm.weight", {C}, Init::ones, "norms");
    layers.push_back(o);
  }
  final_norm = add("model.norm.weight", {C}, Init::ones, "norms");
  lm_head = c.tie_word_embeddings ? embed : add("lm_head.weight", {V, C}, Init::normal, "lm_head");
}

const TensorSpec* ParamLayout::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::vector<std::pair<std::string, int64_t>> ParamLayout::component_counts() const {
  std::vector<std::pair<std::string, int64_t>> counts;
  for (const TensorSpec& t : tensors_) {
    auto it = counts.begin();
    while (it != counts.end() && it->first != t.component) ++it;
    if (it == counts.end())
      counts.emplace_back(t.component, t.numel);
    else
      it->second += t.numel;
  }
  return counts;
}

}  // namespace gattn
