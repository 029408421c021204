// Rotary position embedding in Hugging Face's rotate-half convention, on the first rotary_dim
// channels of each head (channel i pairs with i + rotary_dim/2); the other channels pass through.
#pragma once
#include <cstdint>
#include <vector>

namespace gattn {

// Context extension by changing the frequencies (Hugging Face's `rope_scaling`, factor s):
// - linear: inv_freq_i / s (position interpolation);
// - ntk: the NTK-aware base theta * s^(d / (d - 2)), d = rotary_dim (static; not an HF type);
// - yarn: Peng et al. 2023 as HF computes it: frequencies that turn fewer than beta_slow times
//   over original_max_position_embeddings are interpolated (/ s), those that turn more than
//   beta_fast times are kept, a linear ramp in between; cos and sin are multiplied by
//   attention_factor (default 0.1 ln s + 1).
struct RopeScaling {
  enum class Type { none, linear, ntk, yarn };
  Type type = Type::none;
  double factor = 1;
  int original_max_position_embeddings = 0;  // yarn
  double beta_fast = 32, beta_slow = 1;      // yarn
  double attention_factor = 0;               // yarn; 0: 0.1 ln(factor) + 1
};

// inv_freq_i for i < rotary_dim / 2, and the factor applied to cos and sin.
std::vector<double> rope_inverse_frequencies(int rotary_dim, double theta,
                                             const RopeScaling& scaling, double* attention_factor);

// cos/sin of position p times inv_freq_i (theta^(-2i/rotary_dim) unscaled), at
// [p * rotary_dim/2 + i]; the angles are computed in double.
template <typename T>
struct RopeTable {
  int rotary_dim = 0;
  int max_positions = 0;
  std::vector<T> cos, sin;
};

template <typename T>
RopeTable<T> make_rope_table(int rotary_dim, double theta, int max_positions,
                             const RopeScaling& scaling = {});

struct RopeShape {
  int rows;                  // tokens
  const int32_t* positions;  // [rows]: the position of each row's token
  int heads;
  int head_dim;
  int ld_in;   // row stride of in and d_in
  int ld_out;  // row stride of out and d_out
};

// out may equal in (same stride).
template <typename T>
void rope_forward(T* out, const T* in, const RopeTable<T>& table, const RopeShape& s);

// The inverse rotation; d_in may equal d_out.
template <typename T>
void rope_backward(T* d_in, const T* d_out, const RopeTable<T>& table, const RopeShape& s);

}  // namespace gattn
