// A numpy array that owns a std::vector's buffer: the vector is moved to the heap and freed by
// the array's capsule when numpy lets go of it (no copy).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <initializer_list>
#include <utility>
#include <vector>

namespace gattn::python {

template <typename T>
nanobind::ndarray<nanobind::numpy, T> owned_array(std::vector<T>&& values, size_t dims,
                                                  const size_t* shape) {
  auto* raw = new std::vector<T>(std::move(values));
  nanobind::capsule owner(raw, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nanobind::ndarray<nanobind::numpy, T>(raw->data(), dims, shape, owner);
}

template <typename T>
nanobind::ndarray<nanobind::numpy, T> owned_array(std::vector<T>&& values,
                                                  std::initializer_list<size_t> shape) {
  return owned_array(std::move(values), shape.size(), shape.begin());
}

template <typename T>
nanobind::ndarray<nanobind::numpy, T> owned_array(std::vector<T>&& values,
                                                  const std::vector<size_t>& shape) {
  return owned_array(std::move(values), shape.size(), shape.data());
}

}  // namespace gattn::python
