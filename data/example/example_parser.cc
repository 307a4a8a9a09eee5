// ParseExample and ParseSequenceExample: records of tf.train.Example and
// tf.train.SequenceExample read from their wire format into the tensors of a spec.

#include <ATen/ops/empty.h>

#include <memory>
#include <utility>

#include "common/error.h"
#include "data/example.h"
#include "data/example/example_fields.h"
#include "data/example/feature_values.h"
#include "data/ops/stack_tensors.h"

namespace est::data {
namespace {

/// Puts the tensors of `spec`'s features, from `values`, into `element`.
void AddContextFeatures(const ExampleSpec& spec, const std::vector<FeatureValues>& values, const std::string& label_key,
                        Element* element) {
  size_t i = 0;
  for (const auto& [name, feature] : spec) {
    const FeatureValues& value = values[i++];
    if (feature.fixed_length()) {
      at::Tensor tensor = value.fixed_len(feature, name);
      if (name == label_key) {
        element->labels = std::move(tensor);
      } else {
        element->features.emplace(name, std::move(tensor));
      }
      continue;
    }
    int64_t length = 0;
    element->features.emplace(name, value.var_len(feature, name, &length));
    element->features.emplace(name + kLengthSuffix, HostScalar(length));
  }
}

class ExampleParser {
 public:
  ExampleParser(ExampleSpec spec, std::string label_key)
      : spec_(std::move(spec)), label_key_(std::move(label_key)), index_(IndexOf(spec_)) {
    EST_CHECK(!spec_.empty(), ConfigError, "ParseExample: the spec has no features");
    CheckLengthNames(NamesWithLength(spec_, false), {&spec_}, "ParseExample");
    CheckLabelKey(spec_, label_key_, "ParseExample");
  }

  Element operator()(std::string_view record) const {
    try {
      std::vector<std::string_view> features;
      ExampleFeaturesMessages(record, &features);
      std::vector<FeatureValues> values(index_.size());
      GatherFeatures(features, index_, values.data());
      Element element;
      AddContextFeatures(spec_, values, label_key_, &element);
      return element;
    } catch (const DataError& e) {
      EST_THROW(DataError, "tf.train.Example: ", e.what());
    }
  }

 private:
  ExampleSpec spec_;
  std::string label_key_;
  SpecIndex index_;
};

class SequenceExampleParser {
 public:
  SequenceExampleParser(SequenceExampleSpec spec, std::string label_key)
      : spec_(std::move(spec)),
        label_key_(std::move(label_key)),
        context_index_(IndexOf(spec_.context)),
        sequence_index_(IndexOf(spec_.sequence)) {
    EST_CHECK(!spec_.context.empty() || !spec_.sequence.empty(), ConfigError,
              "ParseSequenceExample: the spec has no features");
    for (const auto& [name, feature] : spec_.sequence) {
      EST_CHECK(feature.fixed_length(), ConfigError, "ParseSequenceExample: sequence feature '", name,
                "' is VarLen; sequence features must be FixedLen (the shape of each step)");
      EST_CHECK(spec_.context.count(name) == 0, ConfigError, "ParseSequenceExample: '", name,
                "' is both a context and a sequence feature");
    }
    const std::vector<const ExampleSpec*> specs{&spec_.context, &spec_.sequence};
    CheckLengthNames(NamesWithLength(spec_.context, false), specs, "ParseSequenceExample");
    CheckLengthNames(NamesWithLength(spec_.sequence, true), specs, "ParseSequenceExample");
    CheckLabelKey(spec_.context, label_key_, "ParseSequenceExample");
  }

  Element operator()(std::string_view record) const {
    try {
      std::vector<std::string_view> context;
      std::vector<std::string_view> feature_lists;
      wire::MessageReader reader(record);
      wire::Field field;
      while (reader.next(&field)) {
        if (field.type != wire::WireType::kLengthDelimited) continue;
        if (field.number == kSequenceContext) context.push_back(field.bytes);
        if (field.number == kSequenceFeatureLists) feature_lists.push_back(field.bytes);
      }
      std::vector<FeatureValues> values(context_index_.size());
      GatherFeatures(context, context_index_, values.data());
      Element element;
      AddContextFeatures(spec_.context, values, label_key_, &element);
      AddSequenceFeatures(feature_lists, &element);
      return element;
    } catch (const DataError& e) {
      EST_THROW(DataError, "tf.train.SequenceExample: ", e.what());
    }
  }

 private:
  /// The steps of each sequence feature: the serialized Feature of each, in order.
  void AddSequenceFeatures(const std::vector<std::string_view>& feature_lists, Element* element) const {
    std::vector<std::vector<std::string_view>> steps(sequence_index_.size());
    for (std::string_view lists : feature_lists) {
      ForEachMapEntry(lists, sequence_index_, [&](size_t i, const std::vector<std::string_view>& list_messages) {
        steps[i].clear();
        for (std::string_view list : list_messages) {
          ForEachMessageField(list, kFeatureListFeatures, [&](std::string_view step) { steps[i].push_back(step); });
        }
      });
    }
    size_t i = 0;
    for (const auto& [name, feature] : spec_.sequence) {
      const std::vector<std::string_view>& feature_steps = steps[i++];
      element->features.emplace(name, StepsTensor(name, feature, feature_steps));
      element->features.emplace(name + kLengthSuffix,
                                HostScalar(static_cast<int64_t>(feature_steps.size())));
    }
  }

  /// [steps, ...] of one sequence feature.
  static at::Tensor StepsTensor(const std::string& name, const FeatureSpec& feature,
                                const std::vector<std::string_view>& steps) {
    if (steps.empty()) {
      std::vector<int64_t> shape{0};
      shape.insert(shape.end(), feature.shape().begin(), feature.shape().end());
      const auto dtype =
          feature.type() == FeatureType::kFloat32 ? at::kFloat : feature.type() == FeatureType::kInt64 ? at::kLong : at::kByte;
      return at::empty(shape, dtype);
    }
    std::vector<at::Tensor> tensors;
    tensors.reserve(steps.size());
    for (std::string_view step : steps) {
      FeatureValues values;
      values.add(step);
      try {
        tensors.push_back(values.fixed_len(feature, name).contiguous());
      } catch (const DataError& e) {
        EST_THROW(DataError, "step ", tensors.size(), " of sequence feature '", name, "': ", e.what());
      }
      if (tensors.size() > 1) {
        EST_CHECK(tensors.back().sizes() == tensors.front().sizes(), DataError, "sequence feature '", name,
                  "': step 0 gives shape ", tensors.front().sizes(), " but step ", tensors.size() - 1, " gives ",
                  tensors.back().sizes());
      }
    }
    return StackTensors(tensors);
  }

  SequenceExampleSpec spec_;
  std::string label_key_;
  SpecIndex context_index_;
  SpecIndex sequence_index_;
};

}  // namespace

RecordParser ParseExample(ExampleSpec spec, std::string label_key) {
  auto parser = std::make_shared<const ExampleParser>(std::move(spec), std::move(label_key));
  return [parser](std::string_view record) { return (*parser)(record); };
}

RecordParser ParseSequenceExample(SequenceExampleSpec spec, std::string label_key) {
  auto parser = std::make_shared<const SequenceExampleParser>(std::move(spec), std::move(label_key));
  return [parser](std::string_view record) { return (*parser)(record); };
}

}  // namespace est::data
