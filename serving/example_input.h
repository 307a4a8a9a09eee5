#pragma once
/// TensorFlow Serving's Classify and Regress: requests of tf.train.Example records (an Input of
/// examples, with a context they share) made into the tensors a model takes, and the outputs
/// their answers are read from.

#include <string>
#include <vector>

#include "data/element.h"
#include "estimator/export/export_manifest.h"
#include "serving/proto/tf_serving.pb.h"

namespace est::serving {
class Predictor;
}  // namespace est::serving

namespace est::serving::detail {

/// The serialized examples of `input`, each with the context's features merged in (an example's
/// own feature of a name wins, as TensorFlow Serving merges them). RequestError for an input of
/// no example.
std::vector<std::string> SerializedExamples(const tf::Input& input);

/// The tensors `predictor`'s model takes for `examples`: parsed by its serving input where it
/// takes records; else each of its inputs read from the feature of that name (float32 from a
/// float_list, int64 from an int64_list, the values of one example filling the input's shape past
/// the batch). RequestError naming the example and feature that do not fit, or an input a
/// tf.train.Example cannot carry.
Features ExampleTensors(const std::vector<std::string>& examples, const Predictor& predictor);

/// The output Classify answers with: "scores", else "probabilities" (floats, one row of class
/// scores per example); "" when the model has neither.
std::string ClassifyOutput(const ExportManifest& manifest);

/// The output Regress answers with: "outputs", else "predictions", else the one float output of
/// one value per example; "" when there is none.
std::string RegressOutput(const ExportManifest& manifest);

}  // namespace est::serving::detail
