#include "pass_hooks.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>

#include "owned_array.h"
#include "util/error.h"

namespace gattn::python {

namespace {
struct NamedSite {
  const char* name;
  SiteName site;
};

const NamedSite kSites[] = {
    {"attention_q", {HookSite::attention_q}},
    {"attention_k", {HookSite::attention_k}},
    {"attention_v", {HookSite::attention_v}},
    {"attention_lse", {HookSite::attention_lse}},
    {"gate_input", {HookSite::gate_output, true, false}},
    {"gate_scores", {HookSite::gate_output, false, true}},
    {"gate_output", {HookSite::gate_output}},
    {"layer_output", {HookSite::layer_output}},
    {"delta_net_gate", {HookSite::delta_net_gate}},
    {"delta_net_log_decay", {HookSite::delta_net_log_decay}},
    {"delta_net_beta", {HookSite::delta_net_beta}},
    {"delta_net_qkv", {HookSite::delta_net_qkv}},
    {"delta_net_state", {HookSite::delta_net_state}},
    {"router_probs", {HookSite::router_probs}},
    {"shared_expert_gate", {HookSite::shared_expert_gate}},
    {"mixer_input", {HookSite::mixer_input}},
    {"mixer_output_input", {HookSite::mixer_output_input}},
    {"mlp_input", {HookSite::mlp_input}},
    {"mlp_down_input", {HookSite::mlp_down_input}},
    {"mlp_output", {HookSite::mlp_output}},
};

// The sites whose tensor the model reads on after the hooks: a hook's change there changes the
// pass (model/hooks.h).
bool writable(const SiteName& s) {
  return !s.gate_input && !s.gate_scores &&
         (s.site == HookSite::attention_v || s.site == HookSite::gate_output ||
          s.site == HookSite::delta_net_gate || s.site == HookSite::layer_output ||
          s.site == HookSite::mlp_output);
}

// How Python sees a site's tensor: [batch, seq, cols], or for delta_net_state [batch, value heads,
// key dim, value dim]; strides in floats.
struct ArrayShape {
  std::vector<size_t> shape;
  std::vector<int64_t> strides;
  int64_t floats() const {
    int64_t n = 1;
    for (size_t d : shape) n *= int64_t(d);
    return n;
  }
};

ArrayShape array_shape(HookSite site, const HookTensor& t, const Config& c, int batch, int seq) {
  if (site != HookSite::delta_net_state)
    return {{size_t(batch), size_t(seq), size_t(t.cols)}, {seq * t.ld, t.ld, 1}};
  const int64_t k = c.linear_key_head_dim, v = c.linear_value_head_dim;
  return {{size_t(batch), size_t(c.linear_num_value_heads), size_t(k), size_t(v)},
          {t.ld, k * v, v, 1}};
}

// The tensor a site names within an event of its hook site.
const HookTensor& tensor_of(const SiteName& s, const HookEvent& e) {
  return s.gate_input ? e.gate_input : s.gate_scores ? e.gate_scores : e.tensor;
}
}  // namespace

SiteName site_named(const std::string& name) {
  for (const NamedSite& s : kSites)
    if (name == s.name) return s.site;
  std::string names;
  for (const std::string& n : site_names()) names += (names.empty() ? "" : ", ") + n;
  fail("unknown site '", name, "': the sites are ", names);
}

std::vector<std::string> site_names() {
  std::vector<std::string> names;
  for (const NamedSite& s : kSites) names.push_back(s.name);
  return names;
}

PythonPassHooks::PythonPassHooks(const Config& config, const CaptureRequest& request, int batch,
                                 int seq)
    : config_(config),
      attention_(request.attention),
      max_bytes_(request.max_bytes),
      batch_(batch),
      seq_(seq) {
  for (const std::string& name : request.sites) captured_sites_.push_back({site_named(name), name});
  for (const auto& [name, fn] : request.hooks) hooks_.push_back({site_named(name), fn});
  for (auto [layer, head] : request.attention) {
    if (layer < 0 || layer >= config.num_hidden_layers)
      fail("attention: layer ", layer, " is outside the model's ", config.num_hidden_layers);
    if (head < 0 || head >= config.num_attention_heads)
      fail("attention: head ", head, " is outside the model's ", config.num_attention_heads);
  }
  copied_bytes_ = int64_t(request.attention.size()) * batch * seq * seq * int64_t(sizeof(float));
  if (copied_bytes_ > request.max_bytes)
    fail("attention probabilities of ", request.attention.size(), " heads take ", copied_bytes_,
         " bytes, above max_capture_bytes ", request.max_bytes);
  if (!request.attention.empty())
    attention_views_ = std::make_unique<LayerViewRecorder>(config.num_hidden_layers, nullptr);
}

void PythonPassHooks::on_tensor(const HookEvent& e) {
  if (attention_views_) attention_views_->on_tensor(e);
  for (const auto& [site, fn] : hooks_)
    if (site.site == e.site && !hook_error_) call_hook(fn, e.layer, tensor_of(site, e), site);
  for (const auto& [site, name] : captured_sites_)
    if (site.site == e.site) copy(name, e.layer, tensor_of(site, e), site.site);
}

void PythonPassHooks::call_hook(const nb::object& fn, int layer, const HookTensor& t,
                                const SiteName& site) {
  if (!t.data) return;
  nb::gil_scoped_acquire held;
  const ArrayShape a = array_shape(site.site, t, config_, batch_, seq_);
  const size_t dims = a.shape.size();
  try {
    // rv_policy::reference: a view of the pass's tensor (without an owner, nanobind copies)
    constexpr auto view = nb::rv_policy::reference;
    if (writable(site))
      fn(layer, nb::cast(nb::ndarray<nb::numpy, float>(t.data, dims, a.shape.data(), nb::handle(),
                                                       a.strides.data()),
                         view));
    else
      fn(layer, nb::cast(nb::ndarray<nb::numpy, const float>(t.data, dims, a.shape.data(),
                                                             nb::handle(), a.strides.data()),
                         view));
  } catch (nb::python_error& error) {
    hook_error_.emplace(std::move(error));
  }
}

void PythonPassHooks::copy(const std::string& site, int layer, const HookTensor& t,
                           HookSite hook_site) {
  if (!t.data) return;
  const ArrayShape a = array_shape(hook_site, t, config_, batch_, seq_);
  const int64_t rows = a.floats() / t.cols;
  const int64_t bytes = a.floats() * int64_t(sizeof(float));
  if (copied_bytes_ + bytes > max_bytes_) {
    refused_bytes_ += bytes;
    return;
  }
  copied_bytes_ += bytes;
  std::vector<float> data(size_t(rows) * t.cols);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(data.data() + r * t.cols, t.data + r * t.ld, size_t(t.cols) * sizeof(float));
  copies_.push_back({site, layer, a.shape, std::move(data)});
}

nb::dict PythonPassHooks::results() {
  if (hook_error_) {
    nb::python_error error = std::move(*hook_error_);
    hook_error_.reset();
    throw error;
  }
  if (refused_bytes_ > 0)
    fail("the capture takes ", copied_bytes_ + refused_bytes_, " bytes, above max_capture_bytes ",
         max_bytes_);
  nb::dict out;
  for (Copy& c : copies_) {
    if (!out.contains(c.site.c_str())) out[c.site.c_str()] = nb::dict();
    nb::dict layers = nb::borrow<nb::dict>(out[c.site.c_str()]);
    layers[nb::int_(c.layer)] = owned_array(std::move(c.data), c.shape);
  }
  copies_.clear();
  if (!attention_views_) return out;
  nb::dict attention;
  const int heads = config_.num_attention_heads, d = config_.head_dim;
  const int group = heads / config_.num_key_value_heads;
  for (auto [layer, head] : attention_) {
    const LayerView& v = attention_views_->layer(layer);
    if (!v.q || !v.k || !v.attn_lse) fail("attention: layer ", layer, " has no softmax attention");
    std::vector<float> p(size_t(batch_) * seq_ * seq_, 0.0f);
    for (int b = 0; b < batch_; ++b)
      for (int i = 0; i < seq_; ++i)
        for (int j = 0; j <= i; ++j)
          p[(size_t(b) * seq_ + i) * seq_ + j] = float(attention_probability(
              v, int64_t(b) * seq_ + i, int64_t(b) * seq_ + j, head, d, group, heads));
    attention[nb::make_tuple(layer, head)] =
        owned_array(std::move(p), {size_t(batch_), size_t(seq_), size_t(seq_)});
  }
  out["attention"] = attention;
  return out;
}

}  // namespace gattn::python
