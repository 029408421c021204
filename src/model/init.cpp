#include "model/init.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/splitmix64.h"
#include "util/threads.h"

namespace gattn {

namespace {
uint64_t stream_key(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the name
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ULL;
  return splitmix64(splitmix64(seed) ^ h);
}

// Uniform in (0, 1]: 53 random bits, never zero.
double uniform(uint64_t key, uint64_t counter) {
  return (double(splitmix64(key + counter) >> 11) + 1.0) * 0x1.0p-53;
}

double normal_from_key(uint64_t key, int64_t i) {  // Box-Muller, one draw per pair of uniforms
  const double u1 = uniform(key, 2 * uint64_t(i)), u2 = uniform(key, 2 * uint64_t(i) + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}
}  // namespace

double normal_draw(uint64_t seed, const std::string& name, int64_t i) {
  return normal_from_key(stream_key(seed, name), i);
}

void init_params(float* params, const ParamLayout& layout, uint64_t seed, double std) {
  for (const TensorSpec& t : layout.tensors()) {
    float* x = params + t.offset;
    switch (t.init) {
      case Init::ones:
        std::fill_n(x, t.numel, 1.0f);
        break;
      case Init::zeros:
        std::fill_n(x, t.numel, 0.0f);
        break;
      case Init::constant:
        std::fill_n(x, t.numel, t.value);
        break;
      case Init::log_uniform: {
        const uint64_t key = stream_key(seed, t.name);
        for (int64_t i = 0; i < t.numel; ++i) x[i] = float(std::log(t.value * uniform(key, i)));
        break;
      }
      case Init::normal: {
        const uint64_t key = stream_key(seed, t.name);
#pragma omp parallel for schedule(static) if (t.numel >= kMinParallelElements)
        for (int64_t i = 0; i < t.numel; ++i) x[i] = float(std * normal_from_key(key, i));
        break;
      }
    }
  }
}

}  // namespace gattn
