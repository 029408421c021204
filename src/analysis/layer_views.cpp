#include "analysis/layer_views.h"

#include <cmath>

namespace gattn {

void LayerViewRecorder::on_tensor(const HookEvent& e) {
  LayerView& v = views_.at(e.layer);
  const HookTensor& t = e.tensor;
  switch (e.site) {
    case HookSite::attention_q:
      v.q = t.data, v.ld_q = t.ld;
      break;
    case HookSite::attention_k:
      v.k = t.data, v.ld_k = t.ld;
      break;
    case HookSite::attention_v:
      v.v = t.data, v.ld_v = t.ld;
      break;
    case HookSite::attention_lse:
      v.attn_lse = t.data;
      break;
    case HookSite::gate_output: {
      const bool forced = interventions_ && interventions_->gate_at(e.layer).active();
      v.gate_in = e.gate_input.data, v.ld_gate_in = e.gate_input.ld;
      v.gate_out = t.data, v.ld_gate_out = t.ld;
      v.gate_z = forced ? nullptr : e.gate_scores.data, v.ld_gate_z = e.gate_scores.ld;
      break;
    }
    case HookSite::layer_output:
      v.output = t.data;
      break;
    case HookSite::delta_net_gate:
      v.delta_net_gate = t.data, v.ld_delta_net_gate = t.ld;
      break;
    case HookSite::delta_net_log_decay:
      v.delta_net_log_decay = t.data;
      break;
    case HookSite::delta_net_beta:
      v.delta_net_beta = t.data;
      break;
    case HookSite::router_probs:
      v.router_probs = t.data;
      break;
    case HookSite::shared_expert_gate:
      v.shared_expert_gate = t.data;
      break;
    case HookSite::mlp_output:
    case HookSite::delta_net_qkv:
    case HookSite::delta_net_state:
      break;  // not used by the analyses
    case HookSite::mixer_input:
    case HookSite::mixer_output_input:
    case HookSite::mlp_input:
    case HookSite::mlp_down_input:
      break;  // ProjectionInputRecorder's (analysis/projection_inputs.h)
  }
}

double attention_probability(const LayerView& v, int64_t query, int64_t key, int h, int d,
                             int group, int heads) {
  const float* q = v.q + query * v.ld_q + h * d;
  const float* k = v.k + key * v.ld_k + (h / group) * d;
  float dot = 0;
  for (int i = 0; i < d; ++i) dot += q[i] * k[i];
  const float scale = 1.0f / std::sqrt(float(d));
  return std::exp(double(dot * scale) - double(v.attn_lse[query * heads + h]));
}

}  // namespace gattn
