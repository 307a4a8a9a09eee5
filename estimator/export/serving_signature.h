#pragma once
/// The serving signature of a model: its inputs (a ServingInputReceiver's) and the outputs
/// model_fn makes of them, and requests checked against it. Shared by the export and by
/// serving::Predictor.

#include <functional>
#include <string>
#include <vector>

#include "data/element.h"
#include "estimator/estimator_spec.h"
#include "estimator/export/serving_input.h"
#include "estimator/export/tensor_spec.h"

namespace est {

/// Checks the inputs a serving_input_fn declares: at least one, each named, names distinct,
/// each of rank 1 or more with sizes of -1 or more. ConfigError naming what is wrong.
void ValidateServingInputs(const std::vector<TensorSpec>& inputs);
/// Checks a serving_input_fn's receiver: its inputs (ValidateServingInputs), and a records
/// input with a parser or neither. ConfigError naming what is wrong.
void ValidateServingInputReceiver(const ServingInputReceiver& receiver);

/// A request of `inputs` filled with zeros, each size of -1 being `free_size`.
Features ExampleRequest(const std::vector<TensorSpec>& inputs, int64_t free_size);

/// The outputs of a model: calls `predict` on example requests with free sizes 1 and 2, and
/// gives each prediction its dtype and shape, -1 where the two calls' sizes differ. ModelError
/// naming the prediction whose dtype or rank differs between the calls.
std::vector<TensorSpec> OutputSignature(const std::vector<TensorSpec>& inputs,
                                        const std::function<TensorMap(const Features&)>& predict);

/// Why `request` does not fit `inputs` — an input missing or unknown, of another dtype or
/// shape, or inputs of different sizes along dimension 0 (the batch) — or "" when it fits.
std::string RequestMismatch(const std::vector<TensorSpec>& inputs, const Features& request);

/// Where two signatures differ ("input 'image': float32 [-1, 28, 28, 1] here, float32
/// [-1, 784] in the export"), or "" when they are equal. `here` and `there` name the two.
std::string SignatureDifference(const std::vector<TensorSpec>& ours, const std::vector<TensorSpec>& theirs,
                                const std::string& what, const std::string& here, const std::string& there);

}  // namespace est
