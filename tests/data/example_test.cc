// tf.train.Example and SequenceExample parsing: every spec kind and dtype against records
// serialized by protobuf itself (our copy of TensorFlow's protos), the wire-format cases
// protobuf allows (unpacked lists, repeated keys, merged messages, unknown fields), DecodeRaw,
// and the errors of records that do not match and of bad specs.

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "data/dataset.h"
#include "data/example.h"
#include "data/example/example.pb.h"
#include "tests/data/elements_dataset.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::ConfigError;
using est::DataError;
using est::data::DecodeRaw;
using est::data::Element;
using est::data::ExampleSpec;
using est::data::FeatureSpec;
using est::data::FeatureType;
using est::data::ParseExample;
using est::data::ParseSequenceExample;
using est::data::SequenceExampleSpec;
namespace tfexample = est::tfexample;

namespace {

void AddFloats(tfexample::Features* features, const std::string& name, std::initializer_list<float> values) {
  auto* list = (*features->mutable_feature())[name].mutable_float_list();
  for (float v : values) list->add_value(v);
}

void AddInts(tfexample::Features* features, const std::string& name, std::initializer_list<int64_t> values) {
  auto* list = (*features->mutable_feature())[name].mutable_int64_list();
  for (int64_t v : values) list->add_value(v);
}

void AddBytes(tfexample::Features* features, const std::string& name, std::initializer_list<std::string> values) {
  auto* list = (*features->mutable_feature())[name].mutable_bytes_list();
  for (const auto& v : values) list->add_value(v);
}

/// Protobuf wire pieces, for records protobuf's own serializer would not write.
std::string Varint(uint64_t value) {
  std::string out;
  do {
    out.push_back(static_cast<char>((value & 0x7f) | (value > 0x7f ? 0x80 : 0)));
    value >>= 7;
  } while (value != 0);
  return out;
}
std::string Key(uint32_t number, uint32_t wire_type) { return Varint((uint64_t{number} << 3) | wire_type); }
std::string Len(uint32_t number, const std::string& bytes) { return Key(number, 2) + Varint(bytes.size()) + bytes; }
std::string Fixed32(uint32_t number, float value) {
  std::string out = Key(number, 5);
  out.append(reinterpret_cast<const char*>(&value), 4);
  return out;
}
/// An Example with one Features map entry `name` -> `feature` (serialized Feature).
std::string OneFeatureExample(const std::string& name, const std::string& feature) {
  return Len(1, Len(1, Len(1, name) + Len(2, feature)));
}

/// A dataset of `elements`, in order.
est::data::Dataset FromElements(std::vector<Element> elements) {
  return est::testing::ElementsDataset(std::move(elements));
}

}  // namespace

TEST_CASE("ParseExample gives FixedLen features their shape, dtype and default", "[data][example]") {
  tfexample::Example example;
  auto* features = example.mutable_features();
  AddFloats(features, "point", {1.5f, -2.f, 3.25f, 4.f});
  AddInts(features, "label", {7});
  AddInts(features, "big", {int64_t{1} << 40, -3});
  AddBytes(features, "name", {"abc"});
  AddBytes(features, "image", {std::string("\x01\x02\x03\x04\x05\x06", 6)});
  ExampleSpec spec{
      {"point", FeatureSpec::FixedLen(FeatureType::kFloat32, {2, 2})},
      {"label", FeatureSpec::FixedLen(FeatureType::kInt64)},
      {"big", FeatureSpec::FixedLen(FeatureType::kInt64, {2})},
      {"name", FeatureSpec::FixedLen(FeatureType::kBytes)},
      {"image", FeatureSpec::FixedLen(FeatureType::kBytes).decoder(DecodeRaw(torch::kUInt8, {2, 3}))},
      {"weight", FeatureSpec::FixedLen(FeatureType::kFloat32, {3}).default_value(torch::tensor(0.5f))},
      {"ids", FeatureSpec::FixedLen(FeatureType::kInt64, {2}).default_value(torch::tensor({4, 5}, torch::kLong))},
  };
  const Element element = ParseExample(spec, "label")(example.SerializeAsString());
  CHECK(torch::equal(element.features.at("point"), torch::tensor({{1.5f, -2.f}, {3.25f, 4.f}})));
  CHECK(torch::equal(element.labels, torch::tensor(7, torch::kLong)));
  CHECK(element.features.count("label") == 0);
  CHECK(torch::equal(element.features.at("big"), torch::tensor({int64_t{1} << 40, int64_t{-3}}, torch::kLong)));
  CHECK(torch::equal(element.features.at("name"), torch::tensor({97, 98, 99}, torch::kUInt8)));
  CHECK(torch::equal(element.features.at("image"), torch::arange(1, 7, torch::kUInt8).view({2, 3})));
  CHECK(torch::equal(element.features.at("weight"), torch::full({3}, 0.5f)));
  CHECK(torch::equal(element.features.at("ids"), torch::tensor({4, 5}, torch::kLong)));
  CHECK(element.features.size() == 6);
}

TEST_CASE("ParseExample gives VarLen features as values and a length, padded_batch pads them", "[data][example]") {
  ExampleSpec spec{{"tokens", FeatureSpec::VarLen(FeatureType::kInt64)},
                   {"scores", FeatureSpec::VarLen(FeatureType::kFloat32)},
                   {"words", FeatureSpec::VarLen(FeatureType::kBytes).decoder(DecodeRaw(torch::kInt16, {}))}};
  auto parse = ParseExample(spec);
  tfexample::Example first;
  AddInts(first.mutable_features(), "tokens", {3, 1, 4});
  AddFloats(first.mutable_features(), "scores", {0.25f});
  AddBytes(first.mutable_features(), "words", {std::string("\x01\x00", 2), std::string("\xff\xff", 2)});
  const Element a = parse(first.SerializeAsString());
  CHECK(torch::equal(a.features.at("tokens"), torch::tensor({3, 1, 4}, torch::kLong)));
  CHECK(a.features.at("tokens_length").item<int64_t>() == 3);
  CHECK(torch::equal(a.features.at("scores"), torch::tensor({0.25f})));
  CHECK(a.features.at("scores_length").item<int64_t>() == 1);
  CHECK(torch::equal(a.features.at("words"), torch::tensor({1, -1}, torch::kInt16)));
  CHECK(a.features.at("words_length").item<int64_t>() == 2);

  tfexample::Example second;  // an empty list and two missing features
  AddInts(second.mutable_features(), "tokens", {});
  const Element b = parse(second.SerializeAsString());
  CHECK(b.features.at("tokens").sizes() == torch::IntArrayRef({0}));
  CHECK(b.features.at("tokens_length").item<int64_t>() == 0);
  CHECK(b.features.at("scores").numel() == 0);
  CHECK(b.features.at("scores").scalar_type() == torch::kFloat);

  tfexample::Example third;
  AddInts(third.mutable_features(), "tokens", {9});
  AddFloats(third.mutable_features(), "scores", {1, 2});
  AddBytes(third.mutable_features(), "words", {std::string("\x02\x00", 2)});
  auto batches = FromElements({parse(first.SerializeAsString()), parse(third.SerializeAsString())})
                     .padded_batch(2)
                     .make_iterator()
                     ->next();
  REQUIRE(batches);
  CHECK(torch::equal(batches->features.at("tokens"), torch::tensor({{3, 1, 4}, {9, 0, 0}}, torch::kLong)));
  CHECK(torch::equal(batches->features.at("tokens_length"), torch::tensor({3, 1}, torch::kLong)));
  CHECK(torch::equal(batches->features.at("scores"), torch::tensor({{0.25f, 0.f}, {1.f, 2.f}})));
  CHECK(torch::equal(batches->features.at("words"), torch::tensor({{1, -1}, {2, 0}}, torch::kInt16)));
}

TEST_CASE("An ids decoder turns each bytes value into int64s without a tensor per value", "[data][example]") {
  // Two ids per value: its length and its first byte.
  const auto length_and_first = [](std::string_view bytes, int64_t* ids) {
    if (bytes == "bad") throw est::DataError("not a word");
    ids[0] = static_cast<int64_t>(bytes.size());
    ids[1] = bytes.empty() ? -1 : static_cast<int64_t>(bytes[0]);
  };
  const auto length_only = [](std::string_view bytes, int64_t* ids) { ids[0] = static_cast<int64_t>(bytes.size()); };
  ExampleSpec spec{{"pair", FeatureSpec::FixedLen(FeatureType::kBytes, {2}).ids_decoder(length_only)},
                   {"words", FeatureSpec::VarLen(FeatureType::kBytes).ids_decoder(length_and_first, 2)},
                   {"one", FeatureSpec::FixedLen(FeatureType::kBytes).ids_decoder(length_only)
                               .default_value(torch::tensor(7, torch::kLong))}};
  auto parse = ParseExample(spec);
  tfexample::Example first;
  AddBytes(first.mutable_features(), "pair", {"ab", ""});
  AddBytes(first.mutable_features(), "words", {"xyz", "q"});
  const Element a = parse(first.SerializeAsString());
  CHECK(torch::equal(a.features.at("pair"), torch::tensor({2, 0}, torch::kLong)));
  CHECK(torch::equal(a.features.at("words"), torch::tensor({{3, 'x'}, {1, 'q'}}, torch::kLong)));
  CHECK(a.features.at("words_length").item<int64_t>() == 2);
  CHECK(a.features.at("one").item<int64_t>() == 7);

  tfexample::Example second;  // no words: an empty int64 [0, 2], which pads with the first
  AddBytes(second.mutable_features(), "pair", {"", "abcd"});
  AddBytes(second.mutable_features(), "one", {"12345"});
  const Element b = parse(second.SerializeAsString());
  CHECK(b.features.at("words").sizes() == torch::IntArrayRef({0, 2}));
  CHECK(b.features.at("words").scalar_type() == torch::kLong);
  CHECK(b.features.at("one").item<int64_t>() == 5);
  const Element batch = FromElements({a, b}).padded_batch(2).make_iterator()->next().value();
  CHECK(torch::equal(batch.features.at("words"), torch::tensor({{{3, 'x'}, {1, 'q'}}, {{0, 0}, {0, 0}}}, torch::kLong)));
  CHECK(torch::equal(batch.features.at("words_length"), torch::tensor({2, 0}, torch::kLong)));

  tfexample::Example bad;
  AddBytes(bad.mutable_features(), "pair", {"a", "b"});
  AddBytes(bad.mutable_features(), "words", {"ok", "bad"});
  CHECK_THROWS_AS(parse(bad.SerializeAsString()), DataError);
  CHECK_THROWS_WITH(parse(bad.SerializeAsString()), Catch::Contains("feature 'words', value 1: not a word"));
  CHECK_THROWS_AS(FeatureSpec::FixedLen(FeatureType::kInt64).ids_decoder(length_only), ConfigError);
  CHECK_THROWS_AS(FeatureSpec::VarLen(FeatureType::kBytes).ids_decoder(length_only, 0), ConfigError);
}

TEST_CASE("ParseExample reads every encoding protobuf allows", "[data][example]") {
  ExampleSpec spec{{"f", FeatureSpec::FixedLen(FeatureType::kFloat32, {3})},
                   {"i", FeatureSpec::VarLen(FeatureType::kInt64)}};
  auto parse = ParseExample(spec);

  SECTION("unpacked float and int64 lists, mixed with packed ones") {
    const std::string floats = Fixed32(1, 1.f) + Len(1, std::string("\0\0\0\x40\0\0\x40\x40", 8));  // 1, [2, 3]
    const std::string ints = Key(1, 0) + Varint(5) + Len(1, Varint(300) + Varint(uint64_t(-2))) + Key(1, 0) + Varint(1);
    const std::string record = Len(1, Len(1, Len(1, "f") + Len(2, Len(2, floats))) + Len(1, Len(1, "i") + Len(2, Len(3, ints))));
    const Element element = parse(record);
    CHECK(torch::equal(element.features.at("f"), torch::tensor({1.f, 2.f, 3.f})));
    CHECK(torch::equal(element.features.at("i"), torch::tensor({5, 300, -2, 1}, torch::kLong)));
  }

  SECTION("a key given twice keeps its last entry; features given twice merge; lists of one kind concatenate") {
    const std::string stale = Len(1, Len(1, "f") + Len(2, Len(2, Len(1, std::string(12, '\0')))));
    const std::string one = Len(2, Len(1, std::string("\0\0\x80\x3f", 4)));        // float_list [1]
    const std::string two = Len(2, Len(1, std::string("\0\0\0\x40\0\0\x40\x40", 8)));  // float_list [2, 3]
    const std::string fresh = Len(1, Len(1, "f") + Len(2, one) + Len(2, two));  // value given twice: merged
    const std::string ints = Len(1, Len(1, "i") + Len(2, Len(3, Len(1, Varint(8)))));
    const std::string record = Len(1, stale + ints) + Len(1, fresh);
    const Element element = parse(record);
    CHECK(torch::equal(element.features.at("f"), torch::tensor({1.f, 2.f, 3.f})));
    CHECK(torch::equal(element.features.at("i"), torch::tensor({8}, torch::kLong)));
  }

  SECTION("a list of another kind replaces the earlier one, as a oneof does") {
    const std::string feature = Len(3, Len(1, Varint(1))) + Len(2, Len(1, std::string(12, '\0')));
    const Element element = parse(OneFeatureExample("f", feature) + OneFeatureExample("i", ""));
    CHECK(torch::equal(element.features.at("f"), torch::zeros({3})));
    CHECK(element.features.at("i_length").item<int64_t>() == 0);  // a Feature with no list: no values
  }

  SECTION("unknown fields, groups and features outside the spec are skipped") {
    const std::string unknown = Key(7, 0) + Varint(99) + Key(9, 3) + Key(1, 0) + Varint(1) + Key(9, 4) +
                                Key(8, 1) + std::string(8, 'x') + Len(15, "junk");
    const std::string feature = Len(2, Len(1, std::string(12, '\0'))) + unknown;
    const std::string record = unknown + OneFeatureExample("f", feature) + OneFeatureExample("other", Len(3, "zz"));
    CHECK(torch::equal(parse(record + Len(1, Len(1, Len(1, "i")))).features.at("f"), torch::zeros({3})));
  }
}

TEST_CASE("A record that does not match the spec is a DataError naming the feature", "[data][example]") {
  ExampleSpec spec{{"x", FeatureSpec::FixedLen(FeatureType::kFloat32, {2})},
                   {"image", FeatureSpec::FixedLen(FeatureType::kBytes).decoder(DecodeRaw(torch::kUInt8, {2, 2}))}};
  auto parse = ParseExample(spec);
  auto record = [](auto fill) {
    tfexample::Example example;
    AddBytes(example.mutable_features(), "image", {"abcd"});
    AddFloats(example.mutable_features(), "x", {1, 2});
    fill(example.mutable_features());
    return example.SerializeAsString();
  };
  CHECK(parse(record([](auto*) {})).features.at("x").numel() == 2);
  CHECK_THROWS_WITH(parse(record([](auto* f) { f->mutable_feature()->erase("x"); })),
                    "tf.train.Example: feature 'x' is missing from the record and its spec has no default value");
  CHECK_THROWS_WITH(parse(record([](auto* f) { AddFloats(f, "x", {3}); })),
                    "tf.train.Example: feature 'x' has 3 float32 value(s); its shape [2] needs 2");
  CHECK_THROWS_WITH(parse(record([](auto* f) {
                      (*f->mutable_feature())["x"].clear_float_list();
                      AddInts(f, "x", {1, 2});
                    })),
                    "tf.train.Example: feature 'x' holds int64 values; the spec expects float32");
  CHECK_THROWS_WITH(parse(record([](auto* f) { (*f->mutable_feature())["image"].mutable_bytes_list()->set_value(0, "abc"); })),
                    Catch::StartsWith("tf.train.Example: feature 'image', value 0: DecodeRaw: 3 bytes, but 4 Byte values "
                                      "of shape [2, 2] take 4"));
  CHECK_THROWS_WITH(parse(record([](auto*) {}).substr(0, 20)), Catch::StartsWith("tf.train.Example: malformed protobuf"));
  CHECK_THROWS_AS(parse(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)), DataError);
}

TEST_CASE("ParseSequenceExample gives context features and per-step features with their lengths", "[data][example]") {
  tfexample::SequenceExample example;
  AddInts(example.mutable_context(), "label", {2});
  AddFloats(example.mutable_context(), "scale", {0.5f});
  auto& frames = (*example.mutable_feature_lists()->mutable_feature_list())["frames"];
  for (int step = 0; step < 3; ++step) {
    auto* list = frames.add_feature()->mutable_float_list();
    list->add_value(static_cast<float>(step));
    list->add_value(static_cast<float>(10 * step));
  }
  auto& words = (*example.mutable_feature_lists()->mutable_feature_list())["words"];
  words.add_feature()->mutable_bytes_list()->add_value("ab");
  words.add_feature()->mutable_bytes_list()->add_value("cd");
  SequenceExampleSpec spec;
  spec.context = {{"label", FeatureSpec::FixedLen(FeatureType::kInt64)},
                  {"scale", FeatureSpec::FixedLen(FeatureType::kFloat32)}};
  spec.sequence = {{"frames", FeatureSpec::FixedLen(FeatureType::kFloat32, {2})},
                   {"words", FeatureSpec::FixedLen(FeatureType::kBytes)},
                   {"absent", FeatureSpec::FixedLen(FeatureType::kInt64, {4})}};
  const Element element = ParseSequenceExample(spec, "label")(example.SerializeAsString());
  CHECK(torch::equal(element.labels, torch::tensor(2, torch::kLong)));
  CHECK(torch::equal(element.features.at("scale"), torch::tensor(0.5f)));
  CHECK(torch::equal(element.features.at("frames"), torch::tensor({{0.f, 0.f}, {1.f, 10.f}, {2.f, 20.f}})));
  CHECK(element.features.at("frames_length").item<int64_t>() == 3);
  CHECK(torch::equal(element.features.at("words"), torch::tensor({{97, 98}, {99, 100}}, torch::kUInt8)));
  CHECK(element.features.at("absent").sizes() == torch::IntArrayRef({0, 4}));
  CHECK(element.features.at("absent_length").item<int64_t>() == 0);

  frames.mutable_feature(1)->mutable_float_list()->add_value(7);
  CHECK_THROWS_WITH(ParseSequenceExample(spec, "label")(example.SerializeAsString()),
                    "tf.train.SequenceExample: step 1 of sequence feature 'frames': feature 'frames' has 3 float32 "
                    "value(s); its shape [2] needs 2");
}

TEST_CASE("DecodeRaw reads little- and big-endian numbers into a shape", "[data][example]") {
  const float values[] = {1.5f, -2.f};
  const std::string little(reinterpret_cast<const char*>(values), sizeof values);
  CHECK(torch::equal(DecodeRaw(torch::kFloat)(little), torch::tensor({1.5f, -2.f})));
  std::string big = little;
  std::reverse(big.begin(), big.begin() + 4);
  std::reverse(big.begin() + 4, big.end());
  CHECK(torch::equal(DecodeRaw(torch::kFloat, {-1, 1}, /*little_endian=*/false)(big), torch::tensor({{1.5f}, {-2.f}})));
  CHECK_THROWS_WITH(DecodeRaw(torch::kFloat, {3})(little), "DecodeRaw: 8 bytes, but 3 Float values of shape [3] take 12");
  CHECK_THROWS_WITH(DecodeRaw(torch::kInt32, {-1})("abc"), "DecodeRaw: 3 bytes do not fill Int values of shape [-1]");
  CHECK_THROWS_AS(DecodeRaw(torch::kFloat, {-1, -1}), ConfigError);
  CHECK_THROWS_AS(DecodeRaw(torch::kBool), ConfigError);
}

TEST_CASE("A bad spec is a ConfigError when the parser is made", "[data][example]") {
  const auto fixed = FeatureSpec::FixedLen(FeatureType::kFloat32, {2});
  CHECK_THROWS_WITH(ParseExample({}), "ParseExample: the spec has no features");
  CHECK_THROWS_WITH(ParseExample({{"x", fixed}}, "y"), "ParseExample: label_key 'y' is not a feature of the spec");
  CHECK_THROWS_WITH(ParseExample({{"x", FeatureSpec::VarLen(FeatureType::kInt64)}}, "x"),
                    "ParseExample: the label feature 'x' must be FixedLen");
  CHECK_THROWS_WITH(ParseExample({{"x", FeatureSpec::VarLen(FeatureType::kInt64)}, {"x_length", fixed}}),
                    "ParseExample: feature 'x' gives 'x_length' too, which is also a feature of the spec");
  CHECK_THROWS_WITH(FeatureSpec::FixedLen(FeatureType::kFloat32, {2}).default_value(torch::zeros({3})),
                    Catch::Contains("the default has shape [3]; the feature's shape is [2]"));
  CHECK_THROWS_WITH(FeatureSpec::FixedLen(FeatureType::kInt64).default_value(torch::zeros({})),
                    Catch::Contains("a int64 feature's default must be Long, not Float"));
  CHECK_THROWS_AS(FeatureSpec::VarLen(FeatureType::kInt64).default_value(torch::zeros({})), ConfigError);
  CHECK_THROWS_AS(FeatureSpec::FixedLen(FeatureType::kFloat32).decoder(DecodeRaw(torch::kUInt8)), ConfigError);
  CHECK_THROWS_AS(FeatureSpec::FixedLen(FeatureType::kFloat32, {-1}), ConfigError);
  SequenceExampleSpec sequence;
  sequence.sequence = {{"s", FeatureSpec::VarLen(FeatureType::kFloat32)}};
  CHECK_THROWS_WITH(ParseSequenceExample(sequence), Catch::Contains("sequence feature 's' is VarLen"));
  sequence.sequence = {{"s", fixed}};
  sequence.context = {{"s_length", fixed}};
  CHECK_THROWS_WITH(ParseSequenceExample(sequence), Catch::Contains("feature 's' gives 's_length' too"));
}
