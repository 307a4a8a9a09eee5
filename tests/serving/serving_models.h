#pragma once
// A regression model with predictions, trained briefly, for the export and Predictor tests.

#include <torch/torch.h>

#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "estimator/export/parsing_serving_input.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

namespace est::testing {

/// FormulaNet on feature "x" (3 floats): predicts "y" (float32 [-1]) and "positive"
/// (bool [-1]); SGD with momentum in training.
inline EstimatorSpec ServedRegression(const Features& features, const at::Tensor& labels, Mode mode,
                                      ModelContext& ctx) {
  auto net = ctx.module("net", FormulaNet);
  auto y = net->forward(features.at("x")).squeeze(1);
  if (mode == Mode::kPredict) return EstimatorSpec::Predict({{"y", y}, {"positive", y.gt(0)}});
  auto loss = torch::mse_loss(y, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)); });
  return EstimatorSpec::Train(loss, sgd);
}

/// The serving input of ServedRegression: "x", float32 [-1, 3].
inline ServingInputReceiver RegressionServingInput() { return {{{"x", at::kFloat, {-1, 3}}}, nullptr}; }

/// The serving input of ServedRegression for serialized tf.train.Example records in input
/// "examples", each with feature "x" (3 floats).
inline ServingInputReceiver RegressionRecordsInput() {
  return ParsingServingInputFn({{"x", data::FeatureSpec::FixedLen(data::FeatureType::kFloat32, {3})}})();
}

/// A serialized tf.train.Example with float feature "x" holding `values` (written as
/// TensorFlow writes it: the float list packed), for requests of records.
inline std::string ExampleRecord(const std::vector<float>& values) {
  auto varint = [](uint64_t value) {
    std::string bytes;
    for (; value >= 0x80; value >>= 7) bytes.push_back(static_cast<char>((value & 0x7f) | 0x80));
    bytes.push_back(static_cast<char>(value));
    return bytes;
  };
  auto field = [&](int number, const std::string& bytes) {  // a length-delimited field
    return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(bytes.size()) + bytes;
  };
  const std::string packed(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  const std::string feature = field(2, field(1, packed));  // Feature.float_list.value
  const std::string entry = field(1, "x") + field(2, feature);  // the map entry "x" → feature
  return field(1, field(1, entry));  // Example.features.feature
}

/// The records of `rows` (a [n, 3] float tensor), one ExampleRecord per row.
inline std::vector<std::string> ExampleRecords(const at::Tensor& rows) {
  std::vector<std::string> records;
  const at::Tensor dense = rows.contiguous();
  for (int64_t row = 0; row < dense.size(0); ++row) {
    const float* values = dense[row].data_ptr<float>();
    records.push_back(ExampleRecord({values, values + dense.size(1)}));
  }
  return records;
}

/// The identity the tests export ServedRegression under.
inline ModelIdentity RegressionIdentity() { return {"served_regression", "1"}; }

/// Requests' inputs: `count` rows of InputOfBatch's features "x", from row `first`.
inline at::Tensor Rows(int64_t first, int64_t count) {
  return torch::cos(torch::arange(384, torch::kFloat32) * 0.37).reshape({128, 3}).narrow(0, first, count).clone();
}

/// A RunConfig that logs seldom.
inline RunConfig QuietConfig() {
  RunConfig config;
  config.log_step_count_steps = 1000;
  return config;
}

/// The training input of ServedRegression.
inline data::Dataset RegressionInput(Mode mode, const distribute::InputContext& input) {
  return InputOfBatch(mode, input, 32);
}

/// Trains `estimator` (of ServedRegression) to global step `steps` and exports it under
/// model_dir/export; returns the version's directory.
inline std::string TrainAndExport(Estimator& estimator, int64_t steps,
                                  const ServingInputFn& serving_input_fn = RegressionServingInput,
                                  const ExportOptions& options = ExportOptions()) {
  estimator.train(RegressionInput, TrainOptions().max_steps(steps));
  return estimator.export_saved_model(estimator.model_dir() + "/export", serving_input_fn, options);
}

/// Estimator::predict's answers for the examples of `request` (tensors with the examples along
/// dimension 0), stacked back into batches.
inline TensorMap PredictAll(Estimator& estimator, const Features& request) {
  const int64_t examples = request.begin()->second.size(0);
  auto input = [&](Mode, const distribute::InputContext&) { return data::Dataset::FromTensors(request).batch(examples); };
  std::map<std::string, std::vector<at::Tensor>> rows;
  for (const Prediction& prediction : estimator.predict(input))
    for (const auto& [name, value] : prediction) rows[name].push_back(value);
  TensorMap answers;
  for (const auto& [name, values] : rows) answers[name] = torch::stack(values);
  return answers;
}

}  // namespace est::testing
