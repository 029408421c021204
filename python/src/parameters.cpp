#include "parameters.h"

#include <nanobind/ndarray.h>

#include <vector>

#include "util/error.h"

namespace gattn::python {

namespace {
// A read-only numpy array of `shape` over `data` (element type T), kept alive by owner.
template <typename T>
nb::object view(const void* data, const std::vector<size_t>& shape, nb::handle owner) {
  return nb::cast(nb::ndarray<nb::numpy, const T>(data, shape.size(), shape.data(), owner),
                  nb::rv_policy::reference);
}

// uint16 bits as ml_dtypes.bfloat16 where the module is there.
nb::object as_bfloat16(nb::object bits) {
  try {
    return bits.attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
  } catch (nb::python_error&) {
    return bits;  // no ml_dtypes: the bits
  }
}
}  // namespace

nb::dict parameters(Weights& weights, nb::handle owner, bool writable) {
  if (writable && weights.storage() != WeightDtype::f32)
    fail("parameters(writable=True): the weights are stored as ",
         weight_dtype_name(weights.storage()), "; load the model with dtype='f32'");
  nb::dict out;
  const std::vector<TensorSpec>& tensors = weights.layout().tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    const std::vector<size_t> shape(t.shape.begin(), t.shape.end());
    const char* name = t.name.c_str();
    if (weights.dtype_of(i) == WeightDtype::f32) {
      const float* data = weights.at(t.offset);
      out[name] = writable
                      ? nb::cast(nb::ndarray<nb::numpy, float>(const_cast<float*>(data),
                                                               shape.size(), shape.data(), owner),
                                 nb::rv_policy::reference)
                      : view<float>(data, shape, owner);
      continue;
    }
    const int64_t cols = t.shape.back(), rows = t.numel / cols;
    const WeightView m = weights.matrix(t.offset, rows, cols);
    if (m.dtype == WeightDtype::bf16)
      out[name] = as_bfloat16(view<uint16_t>(m.data, shape, owner));
    else
      out[name] = view<uint8_t>(m.data, {size_t(rows), size_t(m.row_bytes())}, owner);
  }
  return out;
}

}  // namespace gattn::python
