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

/// A float output of one value per example ([-1] or [-1, 1]), or of a row per example ([-1, n]).
bool FloatRows(const TensorSpec& output, bool one_value) {
  if (!at::isFloatingType(output.dtype) || output.shape.empty() || output.shape.front() >= 0) return false;
  if (one_value) return output.shape.size() == 1 || (output.shape.size() == 2 && output.shape[1] == 1);
  return output.shape.size() == 2;
}

const TensorSpec* Named(const ExportManifest& manifest, const std::string& name) {
  for (const TensorSpec& output : manifest.outputs)
    if (output.name == name) return &output;
  return nullptr;
}

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

std::string ClassifyOutput(const ExportManifest& manifest) {
  for (const char* name : {"scores", "probabilities"})
    if (const TensorSpec* output = Named(manifest, name); output != nullptr && FloatRows(*output, false)) return name;
  return "";
}

std::string RegressOutput(const ExportManifest& manifest) {
  for (const char* name : {"outputs", "predictions"})
    if (const TensorSpec* output = Named(manifest, name); output != nullptr && FloatRows(*output, true)) return name;
  std::string found;
  for (const TensorSpec& output : manifest.outputs) {
    if (!FloatRows(output, true)) continue;
    if (!found.empty()) return "";  // more than one: which is meant is not clear
    found = output.name;
  }
  return found;
}

}  // namespace est::serving::detail
