#pragma once
/// ParsingServingInputFn: requests of serialized tf.train.Example records, parsed with the data
/// module's parser (tf.estimator.export.build_parsing_serving_input_receiver_fn).

#include <torch/arg.h>

#include <string>
#include <vector>

#include "data/example.h"
#include "estimator/export/serving_input.h"
#include "estimator/export/tensor_spec.h"

namespace est {

/// How ParsingServingInputFn names its input and types its features.
struct ParsingServingInputOptions {
  /// The name of the request's input of records (TensorFlow's is "examples").
  TORCH_ARG(std::string, input_name) = "examples";
  /// The tensor a bytes feature's decoder makes, batched ("image": uint8 [-1, 28, 28]); every
  /// bytes feature of a decoder of tensors needs one, since a decoder does not say what it makes.
  /// The tensor of a float32, int64 or ids-decoded feature follows from its spec.
  TORCH_ARG(std::vector<TensorSpec>, bytes_features);
};

/// A serving input whose requests carry one input of serialized tf.train.Example records, each
/// parsed by `spec` (data::ParseExample) into one example of model_fn's features, the examples
/// batched as Dataset::padded_batch batches them: a FixedLen feature of shape S is [-1, S...]; a
/// VarLen one is [-1, -1] padded with zeros to the record of most values, and `<name>_length`
/// int64 [-1] its records' counts; a bytes feature with an ids decoder is int64 with
/// [ids_per_value] added when more than one (make_parse_example_spec's features of strings).
/// A ConfigError names a bytes feature of a decoder of tensors missing from
/// options.bytes_features. A record that does not parse is a DataError naming it and the feature.
ServingInputFn ParsingServingInputFn(data::ExampleSpec spec, ParsingServingInputOptions options = {});

/// The serving input of an export's records as its manifest records them (ExportManifest::
/// record_features), taking them in input `input_name`: what a server parses them with when it
/// has no serving input of the model's.
ServingInputFn RecordedServingInputFn(const std::vector<RecordFeature>& features, const std::string& input_name);

}  // namespace est
