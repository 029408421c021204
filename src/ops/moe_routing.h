// The routing of a mixture-of-experts block (Qwen3-Next, Qwen3.5-MoE, the paper's 15A2B):
// softmax over the router's logits in fp32, the k most probable experts (by descending
// probability; ties go to the lower expert index), their probabilities as the weights of their
// outputs, renormalised to sum to 1 where norm_topk (transformers' norm_topk_prob); and the
// tokens grouped by expert so that each expert runs one GEMM over its tokens, in a fixed order.
#pragma once
#include <cstdint>
#include <vector>

namespace gattn {

struct RouteShape {
  int rows = 0, experts = 0, k = 0;
  bool norm_topk = true;
};

// choice [k]: the k most probable of p [experts], by descending probability (ties to the lower
// index).
void top_k_experts(int32_t* choice, const float* p, int experts, int k);

// probs [rows, experts]; choice and weight [rows, k].
void moe_route_forward(float* probs, int32_t* choice, float* weight, const float* logits,
                       const RouteShape& s);
// d_logits [rows, experts] from d_weight [rows, k] (the loss's gradient with respect to the
// weights forward() wrote; the selection itself has none). d_p: scratch of `experts` floats.
void moe_route_backward(float* d_logits, const float* d_weight, const float* probs,
                        const int32_t* choice, const float* weight, const RouteShape& s,
                        float* d_p);

// Each (token, choice) pair as a row of its expert's group: groups in expert order, rows of a
// group in token order. start [experts + 1]: group e is rows [start[e], start[e + 1]);
// token_of_row [rows * k]; row_of_choice [rows * k]: where choice (t, j) went.
struct ExpertGroups {
  std::vector<int32_t> start, token_of_row, row_of_choice;
  std::vector<int32_t> next;  // group_by_expert's cursor per expert (kept: no allocation a pass)
};
void group_by_expert(ExpertGroups& g, const int32_t* choice, const RouteShape& s);

}  // namespace gattn
