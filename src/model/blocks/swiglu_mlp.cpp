#include "model/blocks/swiglu_mlp.h"

#include "ops/matmul.h"
#include "ops/mlp.h"

namespace gattn {

void swiglu_mlp_forward(const PassContext& pass, const SwigluMlp& m, const float* x, int rows,
                        float* gate_up, float* act, float* out, OpSections& ops) {
  ops.next(m.gate_up_op);
  project(pass.exec, pass.weights, m.gate_up, gate_up, x, rows, m.hidden, 2 * m.width);
  ops.next(m.act_op);
  swiglu_forward(act, gate_up, rows, m.width);
  ops.next(m.down_op);
  project(pass.exec, pass.weights, m.down, out, act, rows, m.width, m.hidden);
}

void swiglu_mlp_backward(const PassContext& pass, const SwigluMlp& m, const float* x,
                         const float* gate_up, const float* act, const float* d_out, int rows,
                         float* d_act, float* d_gate_up, float* d_x, bool accumulate_d_x,
                         Gradients& g, OpSections& ops) {
  const Weights& w = pass.weights;
  const int C = m.hidden, I = m.width;
  ops.next(m.down_op);
  linear_backward(pass.exec, d_act, g.at(m.down), d_out, act, w.at(m.down), rows, I, C);
  ops.next(m.act_op);
  swiglu_backward(d_gate_up, d_act, gate_up, rows, I);
  ops.next(m.gate_up_op);
  linear_backward(pass.exec, d_x, g.at(m.gate_up), d_gate_up, x, w.at(m.gate_up), rows, C, 2 * I,
                  accumulate_d_x);
}

}  // namespace gattn
