#pragma once
/// Internal: finding the features of a spec in a serialized tf.train.Example or
/// SequenceExample, shared by the parsers of one record and of a batch of records.

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/example.h"
#include "data/example/feature_values.h"
#include "data/example/wire_reader.h"

namespace est::data {

/// Field numbers of example.proto and feature.proto.
constexpr uint32_t kExampleFeatures = 1;       // Example.features
constexpr uint32_t kSequenceContext = 1;       // SequenceExample.context
constexpr uint32_t kSequenceFeatureLists = 2;  // SequenceExample.feature_lists
constexpr uint32_t kMapEntries = 1;            // Features.feature, FeatureLists.feature_list
constexpr uint32_t kMapKey = 1;
constexpr uint32_t kMapValue = 2;
constexpr uint32_t kFeatureListFeatures = 1;  // FeatureList.feature

/// The suffix of the length that goes with a VarLen or sequence feature.
constexpr const char* kLengthSuffix = "_length";

/// The entries of a spec by name, numbered in the spec's order, for finding a record's features.
using SpecIndex = std::map<std::string, size_t, std::less<>>;

/// The index of `spec`'s names.
SpecIndex IndexOf(const ExampleSpec& spec);

/// The length-delimited fields numbered `number` of a serialized message, in order.
template <typename OnField>
void ForEachMessageField(std::string_view message, uint32_t number, OnField on_field) {
  wire::MessageReader reader(message);
  wire::Field field;
  while (reader.next(&field)) {
    if (field.number == number && field.type == wire::WireType::kLengthDelimited) on_field(field.bytes);
  }
}

/// Calls `on_entry(index, values)` for each entry of a serialized protobuf map of messages
/// (Features, FeatureLists) whose key is in `index`; `values` are the serialized values of
/// the entry (a value given twice merges). A key given twice keeps its last entry, as
/// protobuf's maps do, so on_entry must replace what an earlier call gave.
template <typename OnEntry>
void ForEachMapEntry(std::string_view map_message, const SpecIndex& index, OnEntry on_entry) {
  std::vector<std::string_view> values;
  ForEachMessageField(map_message, kMapEntries, [&](std::string_view entry) {
    std::string_view key;
    values.clear();
    wire::MessageReader reader(entry);
    wire::Field field;
    while (reader.next(&field)) {
      if (field.type != wire::WireType::kLengthDelimited) continue;
      if (field.number == kMapKey) key = field.bytes;
      if (field.number == kMapValue) values.push_back(field.bytes);
    }
    auto found = index.find(key);
    if (found != index.end()) on_entry(found->second, values);
  });
}

/// Gathers the values of each feature in `index` from the Features messages of one record
/// (Example.features or SequenceExample.context; a field given twice merges) into
/// `values[0 .. index.size())`, which start empty.
void GatherFeatures(const std::vector<std::string_view>& features_messages, const SpecIndex& index,
                    FeatureValues* values);

/// The Example.features messages of a serialized tf.train.Example.
void ExampleFeaturesMessages(std::string_view record, std::vector<std::string_view>* messages);

/// The names of the features of `spec` that give a `<name>_length` too: the VarLen ones, or
/// all of them for a sequence spec.
std::vector<std::string> NamesWithLength(const ExampleSpec& spec, bool sequence);

/// Checks that no `<name>_length` of `names` is also a feature of one of `specs`.
void CheckLengthNames(const std::vector<std::string>& names, const std::vector<const ExampleSpec*>& specs,
                      const char* what);

/// Checks that `label_key`, when set, names a FixedLen feature of `spec`.
void CheckLabelKey(const ExampleSpec& spec, const std::string& label_key, const char* what);

}  // namespace est::data
