// Rows of a KV cache visited as four far-apart streams, which one core reads faster than one
// stream (ops/attention_decode.cpp and its AVX2 kernels).
#pragma once

namespace gattn {

// Visits rows 0 .. n - 1: four(js) with js = {j, j + part, j + 2 part, j + 3 part} for
// j < part = n / 4, then one(j) for each row left over.
template <typename Four, typename One>
void in_four_streams(int n, Four&& four, One&& one) {
  const int part = n / 4;
  for (int j = 0; j < part; ++j) {
    const int js[4] = {j, j + part, j + 2 * part, j + 3 * part};
    four(js);
  }
  for (int j = 4 * part; j < n; ++j) one(j);
}

}  // namespace gattn
