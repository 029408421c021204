#include "ops/quantize_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/ggml_blocks.h"
#include "util/error.h"
#include "util/fp16.h"

namespace gattn {

namespace {

using ggml::BlockQ4_0;
using ggml::BlockQ4_K;
using ggml::BlockQ6_K;
using ggml::BlockQ8_0;

// Below this every value of a group counts as zero (llama.cpp's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, by adding 1.5 * 2^23 (llama.cpp's nearest_int; |v| < 2^22).
int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

template <typename Block>
void put_block(const Block& b, uint8_t* row, int64_t i) {
  std::memcpy(row + i * int64_t(sizeof(Block)), &b, sizeof b);
}

void quantize_q8_0(const float* x, int64_t blocks, uint8_t* out) {
  for (int64_t i = 0; i < blocks; ++i, x += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = float_to_half(d);
    for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(std::round(x[j] * id));
    put_block(b, out, i);
  }
}

void quantize_q4_0(const float* x, int64_t blocks, uint8_t* out) {
  for (int64_t i = 0; i < blocks; ++i, x += 32) {
    float amax = 0, max = 0;  // the first value of largest magnitude, signed
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = float_to_half(d);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, int(int8_t(x[j] * id + 8.5f)));
      const int hi = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
      b.qs[j] = uint8_t(lo | (hi << 4));
    }
    put_block(b, out, i);
  }
}

// A scale and a min for n values (x ~ scale * L + min, L in [0, nmax]) minimising the weighted
// squared error over nstep + 1 candidate scales (llama.cpp's make_qkx2_quants, use_mad false):
// returns the scale, sets *neg_min = -min and L.
float fit_scale_min(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                    float* neg_min, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill_n(L, n, uint8_t(0));
    *neg_min = -min;
    return 0.f;
  }
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * float(L[i]) + min - x[i];
    best_error += weights[i] * (diff * diff);
  }
  uint8_t aux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      aux[i] = uint8_t(l);
      const float w = weights[i], fl = float(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * float(aux[i]) + this_min - x[i];
      error += weights[i] * (diff * diff);
    }
    if (error < best_error) {
      std::copy_n(aux, n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

void quantize_q4_k(const float* x, int64_t blocks, uint8_t* out) {
  for (int64_t i = 0; i < blocks; ++i, x += 256) {
    uint8_t L[256];
    float scales[8], mins[8], weights[32], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      const float* xj = x + 32 * j;
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xj[l]);
      scales[j] = fit_scale_min(32, 15, xj, weights, L + 32 * j, &mins[j], -1.f, 0.1f, 20);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    BlockQ4_K b;
    for (int j = 0; j < 8; ++j) {  // 6-bit scales and mins packed as q4_k_scale_min reads them
      const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
      const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
      if (j < 4) {
        b.scales[j] = ls;
        b.scales[j + 4] = lm;
      } else {
        b.scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
        b.scales[j - 4] |= uint8_t((ls >> 4) << 6);
        b.scales[j] |= uint8_t((lm >> 4) << 6);
      }
    }
    b.d = float_to_half(max_scale / 63.f);
    b.dmin = float_to_half(max_min / 63.f);
    for (int j = 0; j < 8; ++j) {  // the values again, against the scales as stored
      uint8_t sc, m;
      ggml::q4_k_scale_min(j, b.scales, &sc, &m);
      const float d = half_to_float(b.d) * float(sc);
      if (d == 0) continue;
      const float dm = half_to_float(b.dmin) * float(m);
      for (int l = 0; l < 32; ++l)
        L[32 * j + l] = uint8_t(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, 15));
    }
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l)
        b.qs[32 * j + l] = uint8_t(L[64 * j + l] | (L[64 * j + 32 + l] << 4));
    put_block(b, out, i);
  }
}

// The scale of n values x ~ scale * (L - nmax), L in [0, 2 nmax), weighted by x^2, the best of
// 19 candidates (llama.cpp's make_qx_quants, rmse_type 1, no importance): sets L.
float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax < kGroupMaxEps) {
    std::fill_n(L, n, int8_t(0));
    return 0.f;
  }
  const auto level = [&](float iscale, int i) {
    return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
  };
  float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i], fl = float(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], fl = float(level(iscale, i));
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = int8_t(level(iscale, i) + nmax);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

void quantize_q6_k(const float* x, int64_t blocks, uint8_t* out) {
  for (int64_t i = 0; i < blocks; ++i, x += 256) {
    int8_t L[256];
    float scales[16], max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = fit_symmetric_scale(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    BlockQ6_K b;
    std::memset(&b, 0, sizeof b);
    if (max_abs_scale < kGroupMaxEps) {  // all zero
      put_block(b, out, i);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = float_to_half(1 / iscale);
    for (int ib = 0; ib < 16; ++ib)
      b.scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < 16; ++j) {  // the values again, against the scales as stored
      const float d = half_to_float(b.d) * float(b.scales[j]);
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = int8_t(std::clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
    }
    for (int half = 0; half < 2; ++half) {  // low 4 bits in ql, high 2 in qh (q6_k_values)
      const int8_t* q = L + 128 * half;
      uint8_t* ql = b.ql + 64 * half;
      uint8_t* qh = b.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = uint8_t((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        ql[l + 32] = uint8_t((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        qh[l] = uint8_t((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                        ((q[l + 96] >> 4) << 6));
      }
    }
    put_block(b, out, i);
  }
}

}  // namespace

void round_to_int8_steps(const float* x, int64_t n, float* out) {
  float amax = 0;
#pragma omp parallel for reduction(max : amax) if (n >= (int64_t(1) << 16))
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / 127, inverse = amax > 0 ? 127 / amax : 0;
#pragma omp parallel for if (n >= (int64_t(1) << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = std::nearbyint(x[i] * inverse) * scale;
}

void quantize_block_row(WeightDtype dtype, const float* x, int64_t cols, uint8_t* out) {
  GATTN_ASSERT(is_block_format(dtype) && cols % weight_block_values(dtype) == 0, cols,
               " values as ", weight_dtype_name(dtype), " blocks");
  const int64_t blocks = cols / weight_block_values(dtype);
  switch (dtype) {
    case WeightDtype::q8_0:
      return quantize_q8_0(x, blocks, out);
    case WeightDtype::q4_0:
      return quantize_q4_0(x, blocks, out);
    case WeightDtype::q4_k:
      return quantize_q4_k(x, blocks, out);
    case WeightDtype::q6_k:
      return quantize_q6_k(x, blocks, out);
    default:
      break;
  }
  GATTN_ASSERT(false, "quantize_block_row of ", weight_dtype_name(dtype));
}

}  // namespace gattn
