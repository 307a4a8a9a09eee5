#pragma once
/// What a serving request carries and how it becomes model_fn's features
/// (tf.estimator.export.ServingInputReceiver and serving_input_receiver_fn).

#include <functional>
#include <vector>

#include "data/element.h"
#include "estimator/export/tensor_spec.h"

namespace est {

/// The inputs of a serving signature and the map from a request to model_fn's features.
struct ServingInputReceiver {
  /// The request's tensors, in the signature's order; dimension 0 is the batch (-1).
  std::vector<TensorSpec> inputs;
  /// Maps a request's tensors (checked against `inputs` already) to the features model_fn
  /// takes in Mode::kPredict; the request's tensors themselves when unset.
  std::function<Features(const Features& request)> receiver;
};

/// Makes the ServingInputReceiver of an export (tf.estimator's serving_input_receiver_fn).
using ServingInputFn = std::function<ServingInputReceiver()>;

}  // namespace est
