// Where every parameter lives in the one parameter arena (and, mirrored, in the gradient arena):
// names, shapes and offsets, computed from the config without allocating anything.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/config.h"

namespace gattn {

enum class Init { normal, ones, zeros };

struct TensorSpec {
  std::string name;  // Hugging Face Qwen3 names where they exist (docs/MODEL.md)
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t numel = 0;
  Init init = Init::normal;
  std::string component;  // for the parameter table
};

inline constexpr int64_t kAbsent = -1;

struct LayerOffsets {
  int64_t input_norm, attn_proj, o_proj, post_attn_norm, mlp_gate_up, mlp_down;
  // q_proj, k_proj, v_proj and the gate weight are consecutive from attn_proj (one fused GEMM);
  // so are mlp.gate_proj and mlp.up_proj from mlp_gate_up.
  int64_t q_norm = kAbsent, k_norm = kAbsent, gate_logit = kAbsent, sdpa_norm = kAbsent;
  int64_t attn_output_norm = kAbsent, mlp_output_norm = kAbsent;
};

class ParamLayout {
 public:
  explicit ParamLayout(const Config& config);

  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  int64_t total() const { return total_; }
  const TensorSpec* find(const std::string& name) const;
  // Parameter count per component, in first-seen order.
  std::vector<std::pair<std::string, int64_t>> component_counts() const;

  int attn_proj_rows = 0;                          // q + k + v + gate-weight rows
  int64_t embed = 0, final_norm = 0, lm_head = 0;  // lm_head == embed when tied
  std::vector<LayerOffsets> layers;

 private:
  int64_t add(std::string name, std::vector<int64_t> shape, Init init, std::string component);
  std::vector<TensorSpec> tensors_;
  std::unordered_map<std::string, size_t> by_name_;  // index into tensors_: O(1) find
  int64_t total_ = 0;
};

std::string gate_tensor_prefix(GatePosition position);  // e.g. "sdpa_gate"

}  // namespace gattn
