// Finding the features of a spec in a serialized record (example_fields.h).

#include "data/example/example_fields.h"

#include "common/error.h"

namespace est::data {

SpecIndex IndexOf(const ExampleSpec& spec) {
  SpecIndex index;
  for (const auto& entry : spec) index.emplace(entry.first, index.size());
  return index;
}

void GatherFeatures(const std::vector<std::string_view>& features_messages, const SpecIndex& index,
                    FeatureValues* values) {
  for (std::string_view features : features_messages) {
    ForEachMapEntry(features, index, [&](size_t i, const std::vector<std::string_view>& feature_messages) {
      values[i] = FeatureValues();
      if (feature_messages.empty()) values[i].add({});
      for (std::string_view feature : feature_messages) values[i].add(feature);
    });
  }
}

void ExampleFeaturesMessages(std::string_view record, std::vector<std::string_view>* messages) {
  messages->clear();
  ForEachMessageField(record, kExampleFeatures, [&](std::string_view f) { messages->push_back(f); });
}

std::vector<std::string> NamesWithLength(const ExampleSpec& spec, bool sequence) {
  std::vector<std::string> names;
  for (const auto& entry : spec) {
    if (sequence || !entry.second.fixed_length()) names.push_back(entry.first);
  }
  return names;
}

void CheckLengthNames(const std::vector<std::string>& names, const std::vector<const ExampleSpec*>& specs,
                      const char* what) {
  for (const std::string& name : names) {
    const std::string length_name = name + kLengthSuffix;
    for (const ExampleSpec* spec : specs) {
      EST_CHECK(spec->count(length_name) == 0, ConfigError, what, ": feature '", name, "' gives '", length_name,
                "' too, which is also a feature of the spec");
    }
  }
}

void CheckLabelKey(const ExampleSpec& spec, const std::string& label_key, const char* what) {
  if (label_key.empty()) return;
  auto label = spec.find(label_key);
  EST_CHECK(label != spec.end(), ConfigError, what, ": label_key '", label_key, "' is not a feature of the spec");
  EST_CHECK(label->second.fixed_length(), ConfigError, what, ": the label feature '", label_key, "' must be FixedLen");
}

}  // namespace est::data
