// The SwiGLU MLP down(silu(x Wg) * (x Wu)) over rows of x: the computation of a dense MLP block,
// of each expert of a mixture and of its shared expert. Its weights: gate | up as one [2I, C]
// matrix (gate rows first) and down [C, I]; what backward needs is kept in gate_up [rows, 2I]
// and act [rows, I].
#pragma once
#include <cstdint>

#include "model/pass.h"
#include "util/op_profile.h"

namespace gattn {

struct SwigluMlp {
  int64_t gate_up, down;  // layout offsets
  int hidden, width;      // C, I
  // Profile sections of the three ops (one name may serve all).
  const char *gate_up_op, *act_op, *down_op;
};

void swiglu_mlp_forward(const PassContext& pass, const SwigluMlp& m, const float* x, int rows,
                        float* gate_up, float* act, float* out, OpSections& ops);
// d_x = (or += where accumulate_d_x) the gradient with respect to x; both matrices' gradients are
// added to g. d_act [rows, I] and d_gate_up [rows, 2I]: scratch.
void swiglu_mlp_backward(const PassContext& pass, const SwigluMlp& m, const float* x,
                         const float* gate_up, const float* act, const float* d_out, int rows,
                         float* d_act, float* d_gate_up, float* d_x, bool accumulate_d_x,
                         Gradients& g, OpSections& ops);

}  // namespace gattn
