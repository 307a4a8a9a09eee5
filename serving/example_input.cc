#include "serving/example_input.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "data/example.h"
#include "estimator/export/parsing_serving_input.h"
#include "serving/predictor.h"

namespace est::serving::detail {
namespace {

/// The name the examples of a Classify or Regress request go by in messages.
constexpr const char* kExamplesInput = "examples";

}  // namespace

std::vector<std::string> SerializedExamples(const tf::Input& input) {
  std::vector<std::string> examples;
  if (input.has_example_list()) {
    examples.assign(input.example_list().examples().begin(), input.example_list().examples().end());
  } else if (input.has_example_list_with_context()) {
    // Serialized messages concatenated merge: the context first, so that an example's own
    // feature of a name replaces the context's.
    const std::string& context = input.example_list_with_context().context();
    for (const std::string& example : input.example_list_with_context().examples()) examples.push_back(context + example);
  }
  EST_CHECK(!examples.empty(), RequestError, "Input is empty: the request carries no tf.train.Example "
            "(input.example_list.examples or input.example_list_with_context.examples)");
  return examples;
}

Features ExampleTensors(const std::vector<std::string>& examples, const Predictor& predictor) {
  if (!predictor.records_input().empty()) return predictor.parse_records(examples);
  data::ExampleSpec spec;
  for (const TensorSpec& input : predictor.manifest().inputs) {
    const bool float_input = input.dtype == at::kFloat;
    EST_CHECK(float_input || input.dtype == at::kLong, RequestError, "input '", input.name, "' is ",
              input.describe(), ", which a tf.train.Example cannot carry (float_list holds float32, int64_list "
              "int64): send it with Predict");
    std::vector<int64_t> shape(input.shape.begin() + 1, input.shape.end());
    for (int64_t size : shape)
      EST_CHECK(size >= 0, RequestError, "input '", input.name, "' is ", input.describe(), ": a size past the batch "
                "is free, so a tf.train.Example's values cannot say its shape; send it with Predict");
    spec.emplace(input.name, data::FeatureSpec::FixedLen(float_input ? data::FeatureType::kFloat32
                                                                     : data::FeatureType::kInt64, shape));
  }
  const ServingInputReceiver receiver =
      ParsingServingInputFn(std::move(spec), ParsingServingInputOptions().input_name(kExamplesInput))();
  try {
    return receiver.parse_records(examples);
  } catch (const DataError& bad) {
    throw RequestError(bad.what());
  }
}

}  // namespace est::serving::detail
