/// libFuzzer harness for the tf.train.Example parser, with protobuf's own parser as the
/// oracle. The input is one record, parsed by a spec of a VarLen feature of each kind ("f"
/// float32, "i" int64, "b" bytes) and by SequenceExample's parser. A DataError is the expected
/// answer to bad bytes. Where protobuf parses the record as an Example, ours must succeed too
/// (unless the record nests groups deeper than we follow) and give protobuf's values.

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "data/example.h"
#include "data/example/example.pb.h"

namespace {

using est::data::FeatureSpec;
using est::data::FeatureType;

/// What protobuf says feature `name` holds, as the VarLen tensor of `type`; nullopt when it
/// holds another kind of list (our parser must then refuse the record).
std::optional<at::Tensor> Expected(const est::tfexample::Example& example, const std::string& name, FeatureType type) {
  const auto& map = example.features().feature();
  auto found = map.find(name);
  if (found == map.end() || found->second.kind_case() == est::tfexample::Feature::KIND_NOT_SET) {
    return type == FeatureType::kFloat32 ? torch::empty({0}) : torch::empty({0}, torch::kLong);
  }
  const auto& feature = found->second;
  if (type == FeatureType::kFloat32 && feature.has_float_list()) {
    const auto& values = feature.float_list().value();
    return torch::tensor(std::vector<float>(values.begin(), values.end()), torch::kFloat).view({-1});
  }
  if (type == FeatureType::kInt64 && feature.has_int64_list()) {
    const auto& values = feature.int64_list().value();
    return torch::tensor(std::vector<int64_t>(values.begin(), values.end()), torch::kLong).view({-1});
  }
  if (type == FeatureType::kBytes && feature.has_bytes_list()) {
    std::string joined;
    for (const auto& value : feature.bytes_list().value()) joined += value;
    return torch::tensor(std::vector<int64_t>(joined.begin(), joined.end()), torch::kLong);
  }
  return std::nullopt;
}

constexpr std::pair<const char*, FeatureType> kSpecFeatures[] = {
    {"f", FeatureType::kFloat32}, {"i", FeatureType::kInt64}, {"b", FeatureType::kBytes}};

/// Whether our parser must refuse a record protobuf parsed: it holds a list of a kind the
/// spec does not expect, or a bytes value that is not one byte.
bool MustRefuse(const est::tfexample::Example& example) {
  for (const auto& [name, type] : kSpecFeatures) {
    if (!Expected(example, name, type)) return true;
  }
  const auto& map = example.features().feature();
  auto bytes = map.find("b");
  if (bytes == map.end()) return false;
  for (const auto& value : bytes->second.bytes_list().value()) {
    if (value.size() != 1) return true;
  }
  return false;
}

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "example_parser_fuzzer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view record(reinterpret_cast<const char*>(bytes), size);
  // Each bytes value decodes to one int16 (2 bytes) so that values stack; others are refused.
  static const auto parse_example = est::data::ParseExample(
      {{"f", FeatureSpec::VarLen(FeatureType::kFloat32)},
       {"i", FeatureSpec::VarLen(FeatureType::kInt64)},
       {"b", FeatureSpec::VarLen(FeatureType::kBytes).decoder([](std::string_view value) {
          EST_CHECK(value.size() == 1, est::DataError, "one byte per value");
          return torch::tensor(static_cast<int64_t>(static_cast<char>(value[0])), torch::kLong);
        })}});
  static const auto parse_sequence = est::data::ParseSequenceExample(
      {{{"c", FeatureSpec::FixedLen(FeatureType::kInt64).default_value(torch::tensor(0, torch::kLong))}},
       {{"s", FeatureSpec::FixedLen(FeatureType::kFloat32, {2})}}});
  try {
    parse_sequence(record);
  } catch (const est::DataError&) {
  }

  est::tfexample::Example oracle;
  const bool protobuf_parses = oracle.ParseFromArray(bytes, static_cast<int>(size));
  est::data::Element element;
  try {
    element = parse_example(record);
  } catch (const est::DataError& e) {
    if (!protobuf_parses || std::strstr(e.what(), "groups nested") != nullptr) return 0;
    Require(MustRefuse(oracle), e.what());
    return 0;
  }
  if (!protobuf_parses) return 0;
  for (const auto& [name, type] : kSpecFeatures) {
    const auto expected = Expected(oracle, name, type);
    Require(expected.has_value(), "accepted a feature of another kind than the spec's");
    const at::Tensor& got = element.features.at(name);
    Require(got.numel() == expected->numel(), "a different number of values than protobuf's");
    Require(got.numel() == 0 || torch::equal(got.view({-1}), expected->to(got.scalar_type())) ||
                (type == FeatureType::kFloat32 && std::memcmp(got.data_ptr(), expected->data_ptr(), got.nbytes()) == 0),
            "values other than protobuf's");
    Require(element.features.at(std::string(name) + "_length").item<int64_t>() == expected->numel(), "a wrong length");
  }
  return 0;
}
