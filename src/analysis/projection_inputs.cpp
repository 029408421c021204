#include "analysis/projection_inputs.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace gattn {

namespace {
struct Site {
  HookSite site;
  const char* name;
};
constexpr Site kSites[] = {{HookSite::mixer_input, "mixer_input"},
                           {HookSite::mixer_output_input, "mixer_output_input"},
                           {HookSite::mlp_input, "mlp_input"},
                           {HookSite::mlp_down_input, "mlp_down_input"}};
constexpr int kSiteCount = int(std::size(kSites));

int site_index(HookSite site) {
  for (int i = 0; i < kSiteCount; ++i)
    if (kSites[i].site == site) return i;
  return -1;
}
}  // namespace

const char* projection_input_name(HookSite site) {
  const int i = site_index(site);
  return i < 0 ? "" : kSites[i].name;
}

ProjectionInputRecorder::ProjectionInputRecorder(int layers) : sums_(size_t(layers) * kSiteCount) {}

void ProjectionInputRecorder::on_tensor(const HookEvent& e) {
  const int i = site_index(e.site);
  if (i < 0) return;
  Sums& s = sums_.at(size_t(e.layer) * kSiteCount + i);
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
  for (int i = 0; i < kSiteCount; ++i) {
    const Sums& s = sums_.at(size_t(l) * kSiteCount + i);
    if (s.n == 0) continue;
    const double n = double(s.n), m = s.s1 / n, e2 = s.s2 / n, e3 = s.s3 / n, e4 = s.s4 / n;
    const double var = e2 - m * m;
    const double m4 = e4 - 4 * m * e3 + 6 * m * m * e2 - 3 * m * m * m * m;
    out.push_back({.site = kSites[i].name,
                   .values = s.n,
                   .mean = m,
                   .kurtosis = var > 0 ? m4 / (var * var) : 0,
                   .max_abs = s.max_abs});
  }
  return out;
}

}  // namespace gattn
