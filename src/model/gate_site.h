// Where a layer's gate sits, computed once from the config: the attention stage whose output it
// replaces, the shape of that tensor, what it applies and where its scores come from. Forward,
// backward and analysis read the site; none of them branches on the gate's position.
//
// A new gate position is one row of the table in gate_site.cpp (and its GatePosition value); a
// position at a stage that does not exist yet also needs the stage's hook in layer_forward.cpp
// and layer_backward.cpp.
#pragma once
#include <vector>

#include "model/config.h"
#include "ops/gate.h"

namespace gattn {

// The tensors of the attention block that a gate can replace, in forward order.
enum class GateStage {
  none,
  query_projection,   // q heads straight out of the fused projection
  key_projection,     // k heads, likewise
  value_projection,   // v heads, likewise
  query_rotated,      // q after QK-norm and RoPE, as attention reads it
  key_rotated,        // k likewise
  attention_output,   // each head's attention output, before o_proj (G1)
  output_projection,  // the o_proj output (G5)
};

// What the gate computes at its site.
enum class GateOp {
  scores,        // Y * act(z) or Y + act(z)
  silu,          // silu(Y), no parameters
  head_rmsnorm,  // RMSNorm over each head's channels with a weight per head and channel
};

// Where the pre-activation scores z come from.
enum class GateScoreSource {
  none,        // the parameter-free ops
  projection,  // X W^T, columns of the fused q/k/v/gate projection
  logit,       // one learned row shared by every token (input-independent)
};

// Which heads the gated tensor has.
enum class GatedHeads { query, key_value, hidden };

struct GatePositionInfo {
  GatePosition position;
  const char* name;               // config JSON; parameters are named "<name>_gate"
  GateStage stage;                // where it sits
  GateStage stage_after_qk_norm;  // with after_qk_norm (same as stage: the option is invalid)
  GatedHeads heads;
};

// Every gate position but none.
const std::vector<GatePositionInfo>& gate_positions();
const GatePositionInfo& gate_position_info(GatePosition position);

struct GateSite {
  GateStage stage = GateStage::none;
  GateOp op = GateOp::scores;
  GateScoreSource source = GateScoreSource::none;
  int heads = 0, head_dim = 0;  // of the gated tensor (dense: one head of hidden_size)
  int scores = 0;               // scores per token (0 for the parameter-free ops)
  bool headwise = false, head_shared = false, additive = false;
  GateActivation activation = GateActivation::sigmoid;

  bool at(GateStage s) const { return stage != GateStage::none && stage == s; }
  int width() const { return heads * head_dim; }
  // The gate op's shape on `rows` tokens of a tensor with row stride ld_in, written packed.
  GateShape shape(int rows, int ld_in, int ld_z) const;
  // A G1 gate whose scores are not shared is applied by attention itself (OutputGate in
  // ops/attention.h) in training and evaluation passes; one head's share of it.
  bool in_attention() const {
    return at(GateStage::attention_output) && op == GateOp::scores && !head_shared;
  }
  HeadGate head_gate() const {
    return {
        .head_dim = head_dim, .headwise = headwise, .additive = additive, .activation = activation};
  }
};

GateSite gate_site(const Config& config);

}  // namespace gattn
