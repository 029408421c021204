// The inputs of each layer's projections (the mixer's input and output projections, a dense MLP's
// gate/up and down: model/hooks.h's mixer_input, mixer_output_input, mlp_input, mlp_down_input),
// as W8A8 sees them: every value of a site over the analysed tokens pooled, its kurtosis (the
// fourth central moment over the squared second: 3 for a normal distribution, large where a few
// channels or tokens carry massive values) and its largest magnitude, which sets a per-tensor
// int8 scale.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/hooks.h"

namespace gattn {

struct ProjectionInputStats {
  std::string site;  // "mixer_input", "mixer_output_input", "mlp_input", "mlp_down_input"
  int64_t values = 0;
  double mean = 0, kurtosis = 0, max_abs = 0;
};

// Records the four sites of every layer (read only). Moments in double, summed per event.
class ProjectionInputRecorder final : public PassHooks {
 public:
  explicit ProjectionInputRecorder(int layers);
  void on_tensor(const HookEvent& event) override;
  // The sites layer `l` showed, in the order above.
  std::vector<ProjectionInputStats> layer(int l) const;

 private:
  struct Sums {
    int64_t n = 0;
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0, max_abs = 0;
  };
  std::vector<Sums> sums_;  // [layer * 4 + site]
};

// The site's name as the statistics and the JSON report it.
const char* projection_input_name(HookSite site);

}  // namespace gattn
