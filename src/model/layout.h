// Where every parameter lives in the one parameter arena (and, mirrored, in the gradient arena):
// names, shapes and offsets, computed from the config without allocating anything.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/layer_config.h"

namespace gattn {

// constant: TensorSpec::value; log_uniform: log(u), u uniform in (0, TensorSpec::value] (a Gated
// DeltaNet's A_log, as transformers' Qwen3.5 initialises it).
enum class Init { normal, ones, zeros, constant, log_uniform };

struct TensorSpec {
  std::string name;  // Hugging Face Qwen3 names where they exist (docs/MODEL.md)
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t numel = 0;
  Init init = Init::normal;
  std::string component;  // for the parameter table
  float value = 0;        // Init::constant's value, Init::log_uniform's bound
  bool frozen = false;    // trained with no update: no gradient in the norm, no step, no decay
  // Read by elementwise ops as floats whatever the weight storage (every 1-D tensor, and e.g. a
  // depthwise convolution's taps), never through Weights::matrix().
  bool elementwise = false;
};

// What a tensor may add to its name, shape, init and component.
struct TensorOptions {
  float value = 0;  // Init::constant, Init::log_uniform
  bool frozen = false;
  bool elementwise =
      false;  // a tensor of 2 or more dimensions read as floats (1-D ones always are)
};

inline constexpr int64_t kAbsent = -1;

// Where the parameters of each block of a layer sit (the blocks add them: model/blocks/).
struct AttentionParams {
  // q_proj, k_proj, v_proj and the gate weight are consecutive from proj (one fused GEMM).
  int64_t input_norm = kAbsent, proj = kAbsent, o_proj = kAbsent;
  int64_t q_norm = kAbsent, k_norm = kAbsent, gate_logit = kAbsent, sdpa_norm = kAbsent;
  int64_t output_norm = kAbsent;  // sandwich norm
  // Gated DeltaNet (proj: in_proj_qkv | in_proj_z | in_proj_b | in_proj_a; o_proj: out_proj).
  int64_t conv = kAbsent, dt_bias = kAbsent, a_log = kAbsent, head_norm = kAbsent;
};
struct MlpParams {
  // mlp.gate_proj and mlp.up_proj are consecutive from gate_up.
  int64_t input_norm = kAbsent, gate_up = kAbsent, down = kAbsent;
  int64_t output_norm = kAbsent;  // sandwich norm
  // A mixture of experts: the router (mlp.gate); expert e's gate_proj | up_proj from
  // experts + e * expert_stride, its down_proj after them; the shared expert's gate_up and down
  // (and the scalar gate mlp.shared_expert_gate), where it has one.
  int64_t router = kAbsent, experts = kAbsent, expert_stride = 0;
  int64_t expert_down_at = 0;  // down_proj's offset within an expert
  int64_t shared_gate_up = kAbsent, shared_down = kAbsent, shared_gate = kAbsent;
  int64_t expert_down(int e) const { return experts + e * expert_stride + expert_down_at; }
};
struct LayerParams {
  AttentionParams attention;
  MlpParams mlp;
};

class ParamLayout {
 public:
  explicit ParamLayout(const Config& config);

  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  int64_t total() const { return total_; }
  const TensorSpec* find(const std::string& name) const;
  // Parameter count per component, in first-seen order.
  std::vector<std::pair<std::string, int64_t>> component_counts() const;

  // Appends a tensor and returns its offset (the blocks' parameter functions call it).
  int64_t add(std::string name, std::vector<int64_t> shape, Init init, std::string component,
              TensorOptions options = {});

  int64_t embed = 0, final_norm = 0, lm_head = 0;  // lm_head == embed when tied
  std::vector<LayerParams> layers;
  // Block i's parameters (model/weights.h blocks(): a layer's token mixer, then its MLP) are
  // [block_begin[i], block_begin[i + 1]); block_begin has one more entry, final_norm.
  std::vector<int64_t> block_begin;

 private:
  std::vector<TensorSpec> tensors_;
  std::unordered_map<std::string, size_t> by_name_;  // index into tensors_: O(1) find
  int64_t total_ = 0;
};

std::string gate_tensor_prefix(GatePosition position);  // e.g. "sdpa_gate"

}  // namespace gattn
