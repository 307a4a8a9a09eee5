#include "estimator/export/parsing_serving_input.h"

#include <ATen/ATen.h>

#include <memory>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "estimator/export/serving_signature.h"

namespace est {
namespace {

/// The batched tensor a bytes feature's decoder makes, as `bytes_features` states it.
TensorSpec DecodedTensor(const std::string& name, const std::vector<TensorSpec>& bytes_features) {
  for (const TensorSpec& candidate : bytes_features)
    if (candidate.name == name) return candidate;
  EST_THROW(ConfigError, "bytes feature '", name, "' needs its tensor in bytes_features (the dtype and batched shape "
            "its decoder makes, e.g. uint8 [-1, 28, 28]), or an ids decoder (FeatureSpec::ids_decoder)");
}

/// The batched tensors of each feature `spec` parses: from the spec, or from `bytes_features`; a
/// VarLen feature's values padded to the longest record ([-1, -1, ...]) and its lengths.
std::vector<TensorSpec> FeatureTensors(const data::ExampleSpec& spec, const std::vector<TensorSpec>& bytes_features) {
  for (const TensorSpec& given : bytes_features) {
    auto it = spec.find(given.name);
    EST_CHECK(it != spec.end() && it->second.type() == data::FeatureType::kBytes && !it->second.bytes_to_ids(),
              ConfigError, "bytes_features names '", given.name,
              "', which is not a bytes feature of the example spec that a decoder of tensors parses");
  }
  std::vector<TensorSpec> tensors;
  for (const auto& [name, feature] : spec) {
    const bool ids = static_cast<bool>(feature.bytes_to_ids());
    if (feature.type() == data::FeatureType::kBytes && !ids) {
      tensors.push_back(DecodedTensor(name, bytes_features));
    } else {
      TensorSpec tensor{name, feature.type() == data::FeatureType::kFloat32 ? at::kFloat : at::kLong, {-1}};
      if (feature.fixed_length())
        tensor.shape.insert(tensor.shape.end(), feature.shape().begin(), feature.shape().end());
      else
        tensor.shape.push_back(-1);
      if (ids && feature.ids_per_value() > 1) tensor.shape.push_back(feature.ids_per_value());
      tensors.push_back(std::move(tensor));
    }
    if (!feature.fixed_length()) tensors.push_back({name + "_length", at::kLong, {-1}});
  }
  return tensors;
}

/// The features of `spec` as an export records them; none when one is a bytes or VarLen feature.
std::vector<RecordFeature> RecordedFeatures(const data::ExampleSpec& spec) {
  std::vector<RecordFeature> features;
  for (const auto& [name, feature] : spec) {
    if (feature.type() == data::FeatureType::kBytes || !feature.fixed_length()) return {};
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
  // Records are parsed as a batch, VarLen features padded to the longest record as
  // Dataset::padded_batch pads them.
  auto parser = std::make_shared<const data::BatchRecordParser>(
      data::ParseExampleBatch(std::move(spec), "", "input '" + options.input_name() + "'"));
  return [tensors = std::move(tensors), recorded, parser, input_name = options.input_name()] {
    ServingInputReceiver receiver;
    receiver.inputs = tensors;
    receiver.records_input = input_name;
    receiver.record_features = recorded;
    receiver.parse_records = [tensors, parser](const std::vector<std::string>& records) {
      if (records.empty()) return ExampleRequest(tensors, 0);
      return (*parser)(std::vector<std::string_view>(records.begin(), records.end())).features;
    };
    return receiver;
  };
}

}  // namespace est
