#include "analysis/projection_inputs.h"

#include <algorithm>
#include <cmath>

namespace gattn {

namespace {
constexpr HookSite kSites[] = {HookSite::mixer_input, HookSite::mixer_output_input,
                               HookSite::mlp_input, HookSite::mlp_down_input};

int site_index(HookSite site) {
  for (int i = 0; i < 4; ++i)
    if (kSites[i] == site) return i;
  return -1;
}
}  // namespace

const char* projection_input_name(HookSite site) {
  switch (site) {
    case HookSite::mixer_input:
      return "mixer_input";
    case HookSite::mixer_output_input:
      return "mixer_output_input";
    case HookSite::mlp_input:
      return "mlp_input";
    case HookSite::mlp_down_input:
      return "mlp_down_input";
    default:
      return "";
  }
}

ProjectionInputRecorder::ProjectionInputRecorder(int layers) : sums_(size_t(layers) * 4) {}

void ProjectionInputRecorder::on_tensor(const HookEvent& e) {
  const int i = site_index(e.site);
  if (i < 0) return;
  Sums& s = sums_.at(size_t(e.layer) * 4 + i);
  const HookTensor& t = e.tensor;
  for (int64_t r = 0; r < t.rows; ++r) {
    const float* x = t.data + r * t.ld;
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0, most = 0;
    for (int c = 0; c < t.cols; ++c) {
      const double v = x[c], v2 = v * v;
      s1 += v, s2 += v2, s3 += v2 * v, s4 += v2 * v2;
      most = std::max(most, std::abs(v));
    }
    s.s1 += s1, s.s2 += s2, s.s3 += s3, s.s4 += s4;
    s.max_abs = std::max(s.max_abs, most);
    s.n += t.cols;
  }
}

std::vector<ProjectionInputStats> ProjectionInputRecorder::layer(int l) const {
  std::vector<ProjectionInputStats> out;
  for (int i = 0; i < 4; ++i) {
    const Sums& s = sums_.at(size_t(l) * 4 + i);
    if (s.n == 0) continue;
    const double n = double(s.n), m = s.s1 / n, e2 = s.s2 / n, e3 = s.s3 / n, e4 = s.s4 / n;
    const double var = e2 - m * m;
    const double m4 = e4 - 4 * m * e3 + 6 * m * m * e2 - 3 * m * m * m * m;
    out.push_back({.site = projection_input_name(kSites[i]),
                   .values = s.n,
                   .mean = m,
                   .kurtosis = var > 0 ? m4 / (var * var) : 0,
                   .max_abs = s.max_abs});
  }
  return out;
}

}  // namespace gattn
