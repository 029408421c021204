// Model.parameters(): the model's tensors as numpy arrays that view the engine's own storage.
#pragma once
#include <nanobind/nanobind.h>

#include "model/weights.h"

namespace gattn::python {

namespace nb = nanobind;

// {name: array} in the layout's order, each array a view of `weights` kept alive by `owner` (the
// Python Model). f32 tensors as float32; bf16 as ml_dtypes.bfloat16 where that module is
// installed, else uint16 (the bits); llama.cpp block formats as their raw bytes, uint8
// [rows, row bytes]. writable: float32 views the caller may change (f32 storage only, else an
// Error); otherwise read-only.
nb::dict parameters(Weights& weights, nb::handle owner, bool writable);

}  // namespace gattn::python
