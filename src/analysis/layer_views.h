// What analysis reads of each layer, recorded from a forward pass's hooks (model/hooks.h): views
// into the pass's activations, valid until the next pass of the same state (a TrainState keeps
// every block's activations).
#pragma once
#include <vector>

#include "model/hooks.h"
#include "model/intervention.h"

namespace gattn {

struct LayerView {
  const float *q = nullptr, *k = nullptr;  // as attention used them (QK-norm, RoPE, q/k gate)
  int64_t ld_q = 0, ld_k = 0;
  const float* attn_lse = nullptr;  // [rows, H] log-sum-exp of each query's scaled scores
  // The gated tensor before and after the gate (null without a gate); heads of head_dim.
  const float *gate_in = nullptr, *gate_out = nullptr;
  int64_t ld_gate_in = 0, ld_gate_out = 0;
  const float* gate_z = nullptr;  // pre-activation scores (null: parameter-free, or forced)
  int64_t ld_gate_z = 0;          // 0: one shared row (input-independent)
  const float* v = nullptr;       // the values attention read (after any value gate) [rows, K]
  int64_t ld_v = 0;
  const float* output = nullptr;  // the layer's output hidden state [rows, hidden]
  // A Gated DeltaNet layer: its output gate silu(z) as applied, log decay g and beta
  // [rows, value heads].
  const float* delta_net_gate = nullptr;
  int64_t ld_delta_net_gate = 0;
  const float *delta_net_log_decay = nullptr, *delta_net_beta = nullptr;
  // A mixture-of-experts layer: the router's softmax [rows, experts]; the shared expert's gate
  // sigmoid(x . w) [rows] (null without a shared expert).
  const float *router_probs = nullptr, *shared_expert_gate = nullptr;
};

// The attention probability of query row `query` on key row `key` in head h (of `heads`, `group`
// query heads per key head, head dimension d), recomputed from the q, k and log-sum-exp the
// forward pass kept: exp(q . k / sqrt(d) - lse).
double attention_probability(const LayerView& v, int64_t query, int64_t key, int h, int d,
                             int group, int heads);

class LayerViewRecorder final : public PassHooks {
 public:
  // interventions: the pass's (a forced gate's scores are not what it applied: no gate_z).
  LayerViewRecorder(int layers, const Interventions* interventions)
      : views_(layers), interventions_(interventions) {}
  void on_tensor(const HookEvent& event) override;
  const LayerView& layer(int l) const { return views_.at(l); }

 private:
  std::vector<LayerView> views_;
  const Interventions* interventions_;
};

}  // namespace gattn
