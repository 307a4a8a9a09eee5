#pragma once
/// What a serving request carries and how it becomes model_fn's features
/// (tf.estimator.export.ServingInputReceiver and serving_input_receiver_fn).

#include <functional>
#include <string>
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
  /// Set for a signature of serialized records (ParsingServingInputFn): the name of a request's
  /// one input, a batch of byte strings (TensorFlow's DT_STRING, the Open Inference Protocol's
  /// BYTES), one record per example. Empty: requests carry the tensors of `inputs`.
  std::string records_input = {};
  /// Turns a request's records into the tensors of `inputs` (set with records_input); a
  /// DataError names what is wrong with a record.
  std::function<Features(const std::vector<std::string>& records)> parse_records = nullptr;
  /// The records' features, recorded in the export so that a server parses them without this
  /// serving input (ParsingServingInputFn sets them when every feature is float32 or int64;
  /// bytes features go through decoders, which are code).
  std::vector<RecordFeature> record_features = {};
};

/// Makes the ServingInputReceiver of an export (tf.estimator's serving_input_receiver_fn).
using ServingInputFn = std::function<ServingInputReceiver()>;

}  // namespace est
