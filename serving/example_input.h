#pragma once
/// TensorFlow Serving's Classify and Regress: requests of tf.train.Example records (an Input of
/// examples, with a context they share) made into the tensors a model takes (the outputs their
/// answers are read from: estimator/export/example_api_outputs.h).

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

}  // namespace est::serving::detail
