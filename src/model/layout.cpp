#include "model/layout.h"

#include "model/blocks/block_params.h"
#include "model/gate_site.h"
#include "util/error.h"

namespace gattn {

std::string gate_tensor_prefix(GatePosition position) {
  return std::string(gate_position_info(position).name) + "_gate";
}

int64_t ParamLayout::add(std::string name, std::vector<int64_t> shape, Init init,
                         std::string component, TensorOptions options) {
  TensorSpec t{
      std::move(name), std::move(shape),   total_, 1, init, std::move(component), options.value,
      options.frozen,  options.elementwise};
  t.elementwise = t.elementwise || t.shape.size() == 1;
  for (int64_t d : t.shape) t.numel *= d;
  total_ += t.numel;
  tensors_.push_back(std::move(t));
  GATTN_ASSERT(by_name_.emplace(tensors_.back().name, tensors_.size() - 1).second, "tensor name ",
               tensors_.back().name, " twice in the layout");
  return tensors_.back().offset;
}

ParamLayout::ParamLayout(const Config& c) {
  const int64_t C = c.hidden_size, V = c.vocab_size;
  embed = add("model.embed_tokens.weight", {V, C}, Init::normal, "embedding");
  const std::vector<LayerConfig> configs = layer_configs(c);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".";
    LayerParams p;
    block_begin.push_back(total_);
    switch (configs[l].attention.kind) {
      case AttentionKind::full:
        p.attention = add_full_attention_params(*this, configs[l].attention, prefix);
        break;
      case AttentionKind::linear:
        p.attention = add_gated_delta_net_params(*this, configs[l].attention, prefix);
        break;
    }
    block_begin.push_back(total_);
    switch (configs[l].mlp.kind) {
      case MlpKind::dense:
        p.mlp = add_dense_mlp_params(*this, configs[l].mlp, prefix);
        break;
      case MlpKind::moe:
        p.mlp = add_moe_mlp_params(*this, configs[l].mlp, prefix);
        break;
    }
    layers.push_back(p);
  }
  final_norm = add("model.norm.weight", {C}, Init::ones, "norms");
  block_begin.push_back(final_norm);
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
