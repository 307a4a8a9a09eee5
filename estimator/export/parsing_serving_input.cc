#include "estimator/export/parsing_serving_input.h"

#include <ATen/ATen.h>

#include <memory>
#include <utility>

#include "common/error.h"
#include "estimator/export/serving_signature.h"

namespace est {
namespace {

/// The batched tensor of each feature `spec` parses: from the spec, or from `bytes_features`.
std::vector<TensorSpec> FeatureTensors(const data::ExampleSpec& spec, const std::vector<TensorSpec>& bytes_features) {
  for (const TensorSpec& given : bytes_features) {
    auto it = spec.find(given.name);
    EST_CHECK(it != spec.end() && it->second.type() == data::FeatureType::kBytes, ConfigError,
              "bytes_features names '", given.name, "', which is not a bytes feature of the example spec");
  }
  std::vector<TensorSpec> tensors;
  for (const auto& [name, feature] : spec) {
    EST_CHECK(feature.fixed_length(), ConfigError, "feature '", name, "' is VarLen: a serving signature of records "
              "takes FixedLen features only, whose shape is the same in every request");
    if (feature.type() == data::FeatureType::kBytes) {
      const TensorSpec* given = nullptr;
      for (const TensorSpec& candidate : bytes_features)
        if (candidate.name == name) given = &candidate;
      EST_CHECK(given != nullptr, ConfigError, "bytes feature '", name, "' needs its tensor in bytes_features (the "
                "dtype and batched shape its decoder makes, e.g. uint8 [-1, 28, 28])");
      tensors.push_back(*given);
      continue;
    }
    TensorSpec tensor;
    tensor.name = name;
    tensor.dtype = feature.type() == data::FeatureType::kFloat32 ? at::kFloat : at::kLong;
    tensor.shape = {-1};
    tensor.shape.insert(tensor.shape.end(), feature.shape().begin(), feature.shape().end());
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/// The features of `spec` as an export records them; none when one is a bytes feature.
std::vector<RecordFeature> RecordedFeatures(const data::ExampleSpec& spec) {
  std::vector<RecordFeature> features;
  for (const auto& [name, feature] : spec) {
    if (feature.type() == data::FeatureType::kBytes) return {};
    features.push_back({name, feature.type() == data::FeatureType::kFloat32 ? at::kFloat : at::kLong, feature.shape(),
                        feature.default_tensor()});
  }
  return features;
}

}  // namespace

ServingInputFn RecordedServingInputFn(const std::vector<RecordFeature>& features, const std::string& input_name) {
  data::ExampleSpec spec;
  for (const RecordFeature& feature : features) {
    data::FeatureSpec parsed = data::FeatureSpec::FixedLen(
        feature.dtype == at::kFloat ? data::FeatureType::kFloat32 : data::FeatureType::kInt64, feature.shape);
    if (feature.default_value.defined()) parsed.default_value(feature.default_value);
    spec.emplace(feature.name, std::move(parsed));
  }
  return ParsingServingInputFn(std::move(spec), ParsingServingInputOptions().input_name(input_name));
}

ServingInputFn ParsingServingInputFn(data::ExampleSpec spec, ParsingServingInputOptions options) {
  EST_CHECK(!options.input_name().empty(), ConfigError, "ParsingServingInputFn: input_name is empty");
  EST_CHECK(!spec.empty(), ConfigError, "ParsingServingInputFn: the example spec has no features");
  std::vector<TensorSpec> tensors = FeatureTensors(spec, options.bytes_features());
  ValidateServingInputs(tensors);
  const std::vector<RecordFeature> recorded = RecordedFeatures(spec);
  auto parser = std::make_shared<const data::RecordParser>(data::ParseExample(std::move(spec)));
  return [tensors = std::move(tensors), recorded, parser, input_name = options.input_name()] {
    ServingInputReceiver receiver;
    receiver.inputs = tensors;
    receiver.records_input = input_name;
    receiver.record_features = recorded;
    receiver.parse_records = [tensors, parser, input_name](const std::vector<std::string>& records) {
      if (records.empty()) return ExampleRequest(tensors, 0);
      std::map<std::string, std::vector<at::Tensor>> columns;
      for (size_t i = 0; i < records.size(); ++i) {
        data::Element element;
        try {
          element = (*parser)(records[i]);
        } catch (const DataError& error) {
          EST_THROW(DataError, "record ", i, " of input '", input_name, "': ", error.what());
        }
        for (auto& [name, tensor] : element.features) {
          std::vector<at::Tensor>& column = columns[name];
          EST_CHECK(column.empty() || column.front().sizes() == tensor.sizes(), DataError, "record ", i, " of input '",
                    input_name, "': feature '", name, "' has shape ", tensor.sizes(), " but ",
                    column.front().sizes(), " in record 0; expected the same in every record");
          column.push_back(std::move(tensor));
        }
      }
      Features features;
      for (auto& [name, column] : columns) features[name] = at::stack(column, 0);
      return features;
    };
    return receiver;
  };
}

}  // namespace est
