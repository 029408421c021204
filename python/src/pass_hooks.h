// Model.forward's capture, hooks and attention probabilities: a PassHooks (model/hooks.h) that
// copies the tensors asked for into numpy-owned buffers, calls Python hooks at named sites with a
// view of the pass's own tensor (the GIL taken only around each call), and keeps each requested
// layer's q, k and log-sum-exp for attention probabilities recomputed after the pass.
#pragma once
#include <nanobind/nanobind.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/layer_views.h"
#include "model/config.h"
#include "model/hooks.h"

namespace gattn::python {

namespace nb = nanobind;

// A site's name as Python writes it ("layer_output", "gate_output", "gate_input", ...); an Error
// listing the names for another. gate_input and gate_scores are shown with gate_output.
struct SiteName {
  HookSite site;
  bool gate_input = false, gate_scores = false;
};
SiteName site_named(const std::string& name);
std::vector<std::string> site_names();

struct CaptureRequest {
  std::vector<std::string> sites;              // tensors to copy out, every layer
  std::vector<std::pair<int, int>> attention;  // (layer, head) probabilities to recompute
  std::map<std::string, nb::object> hooks;     // site -> fn(layer, array)
  int64_t max_bytes = int64_t(1) << 30;
};

class PythonPassHooks final : public PassHooks {
 public:
  // An Error for an unknown site, a layer or head outside the model, or attention probabilities
  // above max_bytes.
  PythonPassHooks(const Config& config, const CaptureRequest& request, int batch, int seq);
  void on_tensor(const HookEvent& event) override;
  bool changes_tensors() const override { return !hooks_.empty(); }

  // After the pass, with the GIL held: a Python hook's exception or a capture beyond max_bytes
  // is raised; else {site: {layer: array}} and, when asked, "attention": {(layer, head):
  // [batch, seq, seq]}.
  nb::dict results();

 private:
  struct Copy {
    std::string site;
    int layer;
    std::vector<size_t> shape;
    std::vector<float> data;  // [batch * seq, cols], until results()
  };
  void call_hook(const nb::object& fn, int layer, const HookTensor& t, const SiteName& site);
  void copy(const std::string& site, int layer, const HookTensor& t, HookSite hook_site);

  const Config& config_;
  std::vector<std::pair<int, int>> attention_;  // (layer, head) probabilities to recompute
  int64_t max_bytes_;
  std::vector<std::pair<SiteName, std::string>> captured_sites_;
  std::vector<std::pair<SiteName, nb::object>> hooks_;
  int batch_, seq_;
  std::vector<Copy> copies_;
  int64_t copied_bytes_ = 0, refused_bytes_ = 0;
  std::unique_ptr<LayerViewRecorder> attention_views_;
  std::optional<nb::python_error> hook_error_;
};

}  // namespace gattn::python
