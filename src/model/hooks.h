// Hooks: what a pass shows of its tensors to code outside the model (llama.cpp's cb_eval).
// Blocks call on_tensor() at named sites as they compute; analysis records what it reads there,
// and interventions change a tensor in place before the model reads it on. The blocks contain
// only the model.
#pragma once
#include <cstdint>
#include <vector>

namespace gattn {

struct GateSite;

enum class HookSite {
  attention_q,    // q as attention reads it (after QK-norm, RoPE and any q/k gate) [rows, H heads]
  attention_k,    // k likewise [rows, K heads]
  attention_v,    // v as attention reads it (after any value gate) [rows, K heads]; writable
  attention_lse,  // after attention: each query's log-sum-exp of its scaled scores [rows, H]
  gate_output,    // the gate's output [rows, width]; writable (read on by the model afterwards)
  layer_output,   // the layer's output hidden state [rows, hidden]; writable (the next layer,
                  // or the final norm, reads it)
  mlp_output,     // an MLP block's output before the residual add (and any sandwich norm)
                  // [rows, hidden]; writable (the residual add reads it)
  // A Gated DeltaNet layer: its output gate silu(z) [rows, value heads * value dim] (writable: the
  // model multiplies by what it holds afterwards), its log decay g and its beta [rows, value
  // heads]; read only: q, k and v as the delta rule reads them (after the convolution and silu,
  // q and k l2-normalised, q scaled by key_dim^-1/2) [rows, 2 * key width + value width], and
  // each sequence's recurrent state after its last token [sequences, value heads * key dim *
  // value dim] (S [key dim, value dim] per head; shown by passes from position 0 without decode
  // memory: training, analysis, the Python module's forward).
  delta_net_gate,
  delta_net_log_decay,
  delta_net_beta,
  delta_net_qkv,
  delta_net_state,
  // A mixture-of-experts block: the router's softmax [rows, experts] (its top-k are the token's
  // experts: ops/moe_routing.h) and the shared expert's gate sigmoid(x . w) [rows, 1].
  router_probs,
  shared_expert_gate,
  // What the projections of a layer read (the inputs W8A8 quantizes), read only, shown once the
  // block has used them: the normed hidden state the token mixer's input projections read (q/k/v
  // and a gate's, or a Gated DeltaNet's in_proj) [rows, hidden]; what its output projection
  // reads (o_proj, out_proj) [rows, width]; and a dense MLP's: the normed hidden state its gate/up
  // projection reads [rows, hidden] and the SwiGLU output its down projection reads [rows,
  // intermediate]. (Not shown for a mixture of experts' experts.)
  mixer_input,
  mixer_output_input,
  mlp_input,
  mlp_down_input,
};

struct HookTensor {
  float* data = nullptr;
  int64_t rows = 0;
  int cols = 0;
  int64_t ld = 0;  // row stride in floats (0: one row shared by every token)
};

struct HookEvent {
  int layer;
  HookSite site;
  HookTensor tensor;
  const int32_t* positions;  // [rows] each row's sequence position
  int seq_len;               // rows per sequence of the pass
  // gate_output only: the gate's site, its input and its pre-activation scores (data null for
  // the parameter-free ops). Read only: the scores may be the model's own parameters.
  const GateSite* gate = nullptr;
  HookTensor gate_input, gate_scores;
};

// The event of a tensor shown at a site that is not a gate's output (no gate fields).
inline HookEvent tensor_event(int layer, HookSite site, HookTensor tensor, const int32_t* positions,
                              int seq_len) {
  return {.layer = layer,
          .site = site,
          .tensor = tensor,
          .positions = positions,
          .seq_len = seq_len,
          .gate = nullptr,
          .gate_input = {},
          .gate_scores = {}};
}

class PassHooks {
 public:
  virtual ~PassHooks() = default;
  virtual void on_tensor(const HookEvent& event) = 0;
  // Whether on_tensor may change what it sees: a G1 gate is then applied as an op of its own
  // (not inside attention), so that the model reads on the changed gate output. Backward passes
  // refuse such hooks.
  virtual bool changes_tensors() const { return false; }
};

// Several hooks in order (interventions first, then what records the changed tensors).
class HookChain final : public PassHooks {
 public:
  explicit HookChain(std::vector<PassHooks*> hooks) : hooks_(std::move(hooks)) {}
  void on_tensor(const HookEvent& event) override {
    for (PassHooks* h : hooks_) h->on_tensor(event);
  }
  bool changes_tensors() const override {
    for (const PassHooks* h : hooks_)
      if (h->changes_tensors()) return true;
    return false;
  }

 private:
  std::vector<PassHooks*> hooks_;
};

}  // namespace gattn
