// The pass drivers: the memory plans of a pass, and embedding -> every block -> final norm
// forward and back.
#include "model/pass.h"

#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/quantize_blocks.h"
#include "ops/rmsnorm.h"
#include "ops/typed_linear.h"
#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

namespace {
// ExecContext::int8_projection_inputs: the input rounded into a buffer of this thread, valid until
// its next call.
const float* int8_rounded_copy(const float* in, int64_t count) {
  thread_local AlignedFloats rounded;
  if (rounded.size() < size_t(count)) rounded.resize(size_t(count));
  round_to_int8_steps(in, count, rounded.data());
  return rounded.data();
}
}  // namespace

void project(const ExecContext& exec, const Weights& w, int64_t offset, float* out, const float* in,
             int rows, int in_dim, int out_dim, int ld_out) {
  if (ld_out == 0) ld_out = out_dim;
  if (exec.int8_projection_inputs) in = int8_rounded_copy(in, int64_t(rows) * in_dim);
  constexpr int kMaxParts = 8;
  WeightView parts[kMaxParts];  // one per storage the rows lie in
  int n_parts = 0;
  for (int64_t done = 0; done < out_dim; done += parts[n_parts++].rows) {
    GATTN_ASSERT(n_parts < kMaxParts, "a projection over more than ", kMaxParts, " storages");
    parts[n_parts] = w.matrix_part(offset + done * in_dim, out_dim - done, in_dim);
  }
  typed_linear_forward_parts(exec, out, in, parts, n_parts, rows, ld_out);
}

namespace {
void plan_final_norm(Arena& arena, const Weights& w, int64_t N, PassBuffers& b) {
  arena.plan(&b.final_rstd, N, "final norm rstd");
  arena.plan(&b.final_out, N * w.config().hidden_size, "final norm output");
}
}  // namespace

void plan_pass_buffers(Arena& arena, const Weights& w, int64_t N, PassBuffers& b) {
  b.resid.assign(w.blocks() + 1, nullptr);
  for (float*& resid : b.resid) arena.plan(&resid, N * w.config().hidden_size, "residual");
  b.activations.clear();
  for (int i = 0; i < w.blocks(); ++i)
    b.activations.push_back(w.block(i).plan_activations(arena, N));
  arena.begin_shared();
  for (int i = 0; i < w.blocks(); ++i) {
    arena.next_sharer();
    w.block(i).plan_transient(arena, N, *b.activations[i]);
  }
  arena.end_shared();
  plan_final_norm(arena, w, N, b);
}

void plan_inference_buffers(Arena& arena, const Weights& w, int64_t N, PassBuffers& b) {
  b.resid.assign(2, nullptr);
  for (float*& resid : b.resid) arena.plan(&resid, N * w.config().hidden_size, "residual");
  b.activations.clear();
  arena.begin_shared();
  for (int i = 0; i < w.blocks(); ++i) {
    arena.next_sharer();
    b.activations.push_back(w.block(i).plan_activations(arena, N));
    w.block(i).plan_transient(arena, N, *b.activations.back());
  }
  arena.end_shared();
  plan_final_norm(arena, w, N, b);
}

void plan_backward_buffers(Arena& arena, const Weights& w, int64_t N, BackwardBuffers& s) {
  const int64_t C = w.config().hidden_size;
  arena.plan(&s.d_hidden, N * C, "d final norm output");
  arena.plan(&s.d_resid, N * C, "d residual");
  s.scratch.clear();
  arena.begin_shared();
  for (int i = 0; i < w.blocks(); ++i) {
    arena.next_sharer();
    s.scratch.push_back(w.block(i).plan_scratch(arena, N));
  }
  arena.end_shared();
}

void forward_blocks(const PassContext& pass, const int32_t* ids, PassBuffers& b) {
  const Weights& w = pass.weights;
  const Config& c = w.config();
  const int C = c.hidden_size;
  GATTN_ASSERT(!pass.row_starts || (pass.memory && !pass.hooks),
               "a ragged pass is a decode pass without hooks");
  OpSections ops(pass.exec.profile);
  ops.next("embedding");
  embedding_forward(b.block_input(0), ids, w.matrix(w.layout().embed, c.vocab_size, C),
                    pass.rows());
  ops.next(nullptr);
  for (int i = 0; i < w.blocks(); ++i) {
    w.block(i).forward(pass, *b.activations[i], pass.memory ? pass.memory[i] : nullptr,
                       b.block_input(i), b.block_output(i));
    if (pass.hooks && i % 2 == 1)
      pass.hooks->on_tensor(tensor_event(i / 2, HookSite::layer_output,
                                         {b.block_output(i), pass.rows(), C, C}, pass.positions,
                                         pass.seq_len));
  }
  ops.next("norms");
  rmsnorm_forward(b.final_out, b.final_rstd, b.last(), w.at(w.layout().final_norm),
                  {pass.rows(), 1, C, C, C, 0}, float(c.rms_norm_eps));
}

void backward_blocks(const PassContext& pass, const int32_t* ids, const PassBuffers& b,
                     BackwardBuffers& s, Gradients& g, GradientReady* ready) {
  const Weights& w = pass.weights;
  const ParamLayout& layout = w.layout();
  const int C = w.config().hidden_size, N = pass.rows();
  auto complete = [&](int64_t begin, int64_t end) {
    if (ready) ready->complete(begin, end);
  };
  OpSections ops(pass.exec.profile);
  ops.next("norms");
  rmsnorm_backward(s.d_resid, g.at(layout.final_norm), s.d_hidden, b.last(),
                   w.at(layout.final_norm), b.final_rstd, {N, 1, C, C, C, 0}, false);
  complete(layout.final_norm, layout.final_norm + C);
  ops.next(nullptr);
  for (int i = w.blocks() - 1; i >= 0; --i) {
    w.block(i).backward(pass, *b.activations[i], *s.scratch[i], g, b.block_input(i), s.d_resid);
    complete(layout.block_begin[size_t(i)], layout.block_begin[size_t(i) + 1]);
  }
  ops.next("embedding");
  embedding_backward(g.at(layout.embed), s.d_resid, ids, N, C);
  complete(layout.embed, layout.embed + int64_t(w.config().vocab_size) * C);
}

}  // namespace gattn
