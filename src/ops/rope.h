// Rotary position embedding in Hugging Face's rotate-half convention, on the first rotary_dim
// channels of each head (channel i pairs with i + rotary_dim/2); the other channels pass through.
#pragma once
#include <vector>

namespace gattn {

// cos/sin of position p times inv_freq_i = theta^(-2i/rotary_dim), at [p * rotary_dim/2 + i];
// the angles are computed in double.
template <typename T>
struct RopeTable {
  int rotary_dim = 0;
  int max_positions = 0;
  std::vector<T> cos, sin;
};

template <typename T>
RopeTable<T> make_rope_table(int rotary_dim, double theta, int max_positions);

struct RopeShape {
  int rows;  // tokens; row r sits at position pos0 + r % seq_len
  int seq_len;
  int pos0;
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
