#include "model/gate_site.h"

#include "util/error.h"

namespace gattn {

const std::vector<GatePositionInfo>& gate_positions() {
  using S = GateStage;
  static const std::vector<GatePositionInfo> table = {
      {GatePosition::sdpa, "sdpa", S::attention_output, S::attention_output, GatedHeads::query},
      {GatePosition::value, "value", S::value_projection, S::value_projection,
       GatedHeads::key_value},
      {GatePosition::key, "key", S::key_projection, S::key_rotated, GatedHeads::key_value},
      {GatePosition::query, "query", S::query_projection, S::query_rotated, GatedHeads::query},
      {GatePosition::dense, "dense", S::output_projection, S::output_projection,
       GatedHeads::hidden},
  };
  return table;
}

const GatePositionInfo& gate_position_info(GatePosition position) {
  for (const GatePositionInfo& info : gate_positions())
    if (info.position == position) return info;
  internal_failure(__FILE__, __LINE__, "gate_positions() has every position", "position ",
                   int(position), " has no entry");
}

GateShape GateSite::shape(int rows, int ld_in, int ld_z) const {
  return {.rows = rows,
          .heads = heads,
          .head_dim = head_dim,
          .headwise = headwise,
          .head_shared = head_shared,
          .additive = additive,
          .activation = activation,
          .ld_y = ld_in,
          .ld_y_out = width(),
          .ld_z = ld_z};
}

GateSite gate_site(const Config& c) {
  const GateConfig& g = c.gate;
  if (!g.enabled()) return {};
  const GatePositionInfo& info = gate_position_info(g.position);
  GateSite site{.stage = g.after_qk_norm ? info.stage_after_qk_norm : info.stage,
                .headwise = g.headwise,
                .head_shared = g.head_shared,
                .additive = g.additive,
                .activation = g.activation};
  switch (info.heads) {
    case GatedHeads::query:
      site.heads = c.num_attention_heads, site.head_dim = c.head_dim;
      break;
    case GatedHeads::key_value:
      site.heads = c.num_key_value_heads, site.head_dim = c.head_dim;
      break;
    case GatedHeads::hidden:
      site.heads = 1, site.head_dim = c.hidden_size;
      break;
  }
  switch (g.kind) {
    case GateKind::input_dependent:
    case GateKind::ns_sigmoid:
      site.source = GateScoreSource::projection;
      break;
    case GateKind::input_independent:
      site.source = GateScoreSource::logit;
      break;
    case GateKind::silu_only:
      site.op = GateOp::silu;
      break;
    case GateKind::head_rmsnorm:
      site.op = GateOp::head_rmsnorm;
      break;
  }
  if (site.op == GateOp::scores) site.scores = g.headwise ? site.heads : site.width();
  return site;
}

}  // namespace gattn
