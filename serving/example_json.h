#pragma once
/// TensorFlow Serving's REST :classify and :regress bodies: tf.train.Examples written as JSON
/// objects ({"examples": [{"feature": value or list, ...}], "context": {...}}), and the results
/// as TensorFlow Serving writes them ({"results": [...]}).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "serving/proto/tf_serving.pb.h"

namespace est::serving {

/// The Input of a :classify or :regress body (its "signature_name" into `spec`): each example's
/// features as tf.train.Example features — whole numbers an int64_list, numbers with a fraction
/// or exponent a float_list, strings and {"b64": "..."} a bytes_list; a value or a list of them.
/// RequestError naming what is wrong (not JSON, no "examples", a value of no such type, more
/// than `max_bytes` bytes).
tf::Input DecodeExamplesJson(const std::string& body, int64_t max_bytes, tf::ModelSpec& spec);

}  // namespace est::serving

namespace est::serving::detail {

/// {"results": [[["label", score], ...] per example]}.
nlohmann::json ClassificationJson(const tf::ClassificationResult& result);
/// {"results": [value per example]}.
nlohmann::json RegressionJson(const tf::RegressionResult& result);

}  // namespace est::serving::detail
