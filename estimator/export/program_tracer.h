#pragma once
/// Traces a model's prediction function into the TorchScript program of an export (model.pt).

#include <ATen/core/Generator.h>

#include <functional>
#include <string>
#include <vector>

#include "data/element.h"
#include "estimator/estimator_spec.h"
#include "estimator/export/tensor_spec.h"
#include "estimator/model_context.h"

namespace est {

/// The program of `predict` (a request of `inputs` → predictions), as the bytes of a
/// TorchScript module: `variables` (the tensors predict reads, by checkpoint key) become its
/// parameters (buffers where they do not require grad; names with characters other than
/// letters, digits and '_' written with '_'), and its forward, traced on a request of random
/// values whose free sizes are 3, takes the inputs in order and returns the predictions by name.
/// The program, loaded back, is then run on requests of free sizes 1, 5 and 3 (other values) and must give
/// predict's answers (float outputs within 1e-6 + 1e-5 × |value|, others exactly): a ModelError
/// names the output that differs, or the error of a program that fails there, with what the
/// tracer cannot record (branches on values, sizes read in C++ and passed back as numbers, work
/// outside LibTorch's operators). Sets every variable's requires_grad to false.
/// A request of `inputs` with free sizes `free_size`: floats normally distributed (both signs, so
/// that branches on values go both ways), integers in [0, 3), booleans either, from `generator`.
Features RandomRequest(const std::vector<TensorSpec>& inputs, int64_t free_size, at::Generator& generator);

std::string TraceProgram(const std::vector<TensorSpec>& inputs, const NamedTensors& variables,
                         const std::function<TensorMap(const Features&)>& predict);

}  // namespace est
