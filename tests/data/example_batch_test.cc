// ParseExampleBatch and Dataset::parse_batches: a batch parsed at once equals the records
// parsed one by one and padded_batch'ed (every spec kind, missing features, merged and
// unpacked lists), errors name the record in the batch, and the dataset op groups, skips,
// counts and parses in parallel as batch and map do.

#include <torch/torch.h>

#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "data/dataset.h"
#include "data/example.h"
#include "data/example/example.pb.h"
#include "data/tfrecord.h"
#include "data/tfrecord_dataset.h"
#include "tests/test_util.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::ConfigError;
using est::DataError;
using est::data::Element;
using est::data::ExampleSpec;
using est::data::FeatureSpec;
using est::data::FeatureType;
namespace tfexample = est::tfexample;

namespace {

/// Writes the first byte of a value and its length as two ids.
void TwoIds(std::string_view bytes, int64_t* ids) {
  ids[0] = bytes.empty() ? -1 : static_cast<unsigned char>(bytes[0]);
  ids[1] = static_cast<int64_t>(bytes.size());
}

/// A spec of every kind ParseExampleBatch writes directly or batches per record.
ExampleSpec EveryKindSpec() {
  ExampleSpec spec;
  spec.emplace("dense", FeatureSpec::FixedLen(FeatureType::kFloat32, {2}));
  spec.emplace("count", FeatureSpec::FixedLen(FeatureType::kInt64, {}).default_value(at::scalar_tensor(7, at::kLong)));
  spec.emplace("floats", FeatureSpec::VarLen(FeatureType::kFloat32));
  spec.emplace("ints", FeatureSpec::VarLen(FeatureType::kInt64));
  spec.emplace("pair", FeatureSpec::FixedLen(FeatureType::kBytes, {}).ids_decoder(TwoIds, 2));
  spec.emplace("words", FeatureSpec::VarLen(FeatureType::kBytes).ids_decoder(
                            [](std::string_view bytes, int64_t* id) { *id = static_cast<int64_t>(bytes.size()); }));
  spec.emplace("blobs", FeatureSpec::VarLen(FeatureType::kBytes));
  spec.emplace("image", FeatureSpec::FixedLen(FeatureType::kBytes, {}));
  spec.emplace("label", FeatureSpec::FixedLen(FeatureType::kInt64, {1}));
  return spec;
}

/// Random records of EveryKindSpec: lists of 0 to 4 values, some features missing (those with a
/// default or VarLen), bytes values of different sizes, features the spec does not name.
std::vector<std::string> RandomRecords(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  auto below = [&](int n) { return static_cast<int>(random() % static_cast<uint32_t>(n)); };
  auto word = [&] { return std::string(static_cast<size_t>(below(5)), static_cast<char>('a' + below(26))); };
  std::vector<std::string> records;
  for (size_t r = 0; r < count; ++r) {
    tfexample::Example example;
    auto& map = *example.mutable_features()->mutable_feature();
    map["dense"].mutable_float_list()->add_value(static_cast<float>(below(100)) / 8);
    map["dense"].mutable_float_list()->add_value(-static_cast<float>(r));
    if (below(3) != 0) map["count"].mutable_int64_list()->add_value(below(1000) - 500);
    if (below(4) != 0) {
      for (int i = below(5); i > 0; --i) map["floats"].mutable_float_list()->add_value(static_cast<float>(below(9)));
    }
    for (int i = below(5); i > 0; --i) map["ints"].mutable_int64_list()->add_value(int64_t{1} << below(62));
    map["pair"].mutable_bytes_list()->add_value(word());
    for (int i = below(5); i > 0; --i) map["words"].mutable_bytes_list()->add_value(word());
    // A record's blobs decode alike (uint8 [3]) and there is at least one, as ParseExample and
    // padded_batch need them.
    for (int i = below(3) + 1; i > 0; --i) map["blobs"].mutable_bytes_list()->add_value(std::string(3, 'a' + below(26)));
    map["image"].mutable_bytes_list()->add_value(std::string(4, 'a' + below(26)));
    map["label"].mutable_int64_list()->add_value(below(2));
    if (below(6) == 0) map["unknown"].mutable_float_list()->add_value(1);
    records.push_back(example.SerializeAsString());
  }
  return records;
}

std::vector<std::string_view> Views(const std::vector<std::string>& records, size_t begin, size_t end) {
  return std::vector<std::string_view>(records.begin() + static_cast<std::ptrdiff_t>(begin),
                                       records.begin() + static_cast<std::ptrdiff_t>(end));
}

/// What ParseExample and padded_batch make of `records`.
Element PerRecord(const ExampleSpec& spec, const std::string& label, const std::vector<std::string_view>& records) {
  const auto parse = est::data::ParseExample(spec, label);
  std::vector<Element> elements;
  for (std::string_view record : records) elements.push_back(parse(record));
  return est::data::BatchElements(elements, /*padded=*/true);
}

void CheckSame(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  INFO(what);
  REQUIRE(actual.defined() == expected.defined());
  if (!actual.defined()) return;
  REQUIRE(actual.scalar_type() == expected.scalar_type());
  REQUIRE(actual.sizes() == expected.sizes());
  CHECK(at::equal(actual, expected));
}

void CheckSameElement(const Element& actual, const Element& expected) {
  REQUIRE(actual.features.size() == expected.features.size());
  for (const auto& [name, tensor] : expected.features) {
    REQUIRE(actual.features.count(name) == 1);
    CheckSame(actual.features.at(name), tensor, "feature " + name);
  }
  CheckSame(actual.labels, expected.labels, "labels");
}

/// TFRecord file of `records` in a fresh directory.
std::string WriteRecords(const std::string& name, const std::vector<std::string>& records) {
  const std::string file = (est::testing::FreshTempDir(name) / "records.tfrecord").string();
  est::data::TFRecordWriter writer(file);
  for (const std::string& record : records) writer.write(record);
  writer.close();
  return file;
}

}  // namespace

TEST_CASE("ParseExampleBatch equals ParseExample and padded_batch on random records of every kind",
          "[data][example]") {
  const ExampleSpec spec = EveryKindSpec();
  const std::vector<std::string> records = RandomRecords(61, 5);
  const auto parse_batch = est::data::ParseExampleBatch(spec, "label");
  for (size_t batch : {1, 7, 61}) {
    for (size_t begin = 0; begin + batch <= records.size(); begin += batch) {
      INFO("records " << begin << " to " << begin + batch);
      const auto views = Views(records, begin, begin + batch);
      const Element parsed = parse_batch(views);
      CheckSameElement(parsed, PerRecord(spec, "label", views));
      CHECK(parsed.features.at("pair").sizes() == at::IntArrayRef({static_cast<int64_t>(batch), 2}));
      CHECK(parsed.features.count("words_length") == 1);
    }
  }
  // Without a label key the label is a feature like the others.
  CheckSameElement(est::data::ParseExampleBatch(spec)(Views(records, 0, 9)), PerRecord(spec, "", Views(records, 0, 9)));
}

TEST_CASE("ParseExampleBatch merges repeated lists and reads unpacked ones", "[data][example]") {
  ExampleSpec spec;
  spec.emplace("ints", FeatureSpec::VarLen(FeatureType::kInt64));
  spec.emplace("x", FeatureSpec::FixedLen(FeatureType::kFloat32, {3}));
  tfexample::Feature first;
  first.mutable_int64_list()->add_value(1);
  first.mutable_int64_list()->add_value(300);
  tfexample::Feature second;
  second.mutable_int64_list()->add_value(-2);
  tfexample::Feature floats;
  for (float v : {0.5F, 1.5F, 2.5F}) floats.mutable_float_list()->add_value(v);
  // One map entry holding two Feature values (protobuf merges them into [1, 300, -2]), written by
  // hand since protobuf's serializer writes one.
  const auto len = [](uint32_t number, const std::string& bytes) {
    std::string out(1, static_cast<char>((number << 3) | 2));
    out.push_back(static_cast<char>(bytes.size()));
    return out + bytes;
  };
  const std::string entry = len(1, "ints") + len(2, first.SerializeAsString()) + len(2, second.SerializeAsString());
  const std::string x_entry = len(1, "x") + len(2, floats.SerializeAsString());
  const std::string record = len(1, len(1, entry) + len(1, x_entry));
  const std::vector<std::string_view> records{record, record};
  const Element batch = est::data::ParseExampleBatch(spec)(records);
  CHECK(at::equal(batch.features.at("ints"), torch::tensor({{1, 300, -2}, {1, 300, -2}}, at::kLong)));
  CHECK(at::equal(batch.features.at("ints_length"), torch::tensor({3, 3}, at::kLong)));
  CHECK(at::equal(batch.features.at("x"), torch::tensor({{0.5F, 1.5F, 2.5F}, {0.5F, 1.5F, 2.5F}})));
  CheckSameElement(batch, PerRecord(spec, "", records));
}

TEST_CASE("ParseExampleBatch names the record and the feature of an error", "[data][example]") {
  const ExampleSpec spec = EveryKindSpec();
  std::vector<std::string> records = RandomRecords(6, 9);
  const auto parse_batch = est::data::ParseExampleBatch(spec, "label");
  SECTION("too many values") {
    tfexample::Example example;
    example.ParseFromString(records[3]);
    (*example.mutable_features()->mutable_feature())["dense"].mutable_float_list()->add_value(1);
    records[3] = example.SerializeAsString();
    CHECK_THROWS_WITH(parse_batch(Views(records, 0, 6)),
                      Catch::Contains("record 3 of the batch") && Catch::Contains("feature 'dense' has 3 float32") &&
                          Catch::Contains("needs 2"));
  }
  SECTION("a missing feature without a default") {
    tfexample::Example example;
    example.ParseFromString(records[4]);
    example.mutable_features()->mutable_feature()->erase("label");
    records[4] = example.SerializeAsString();
    CHECK_THROWS_WITH(parse_batch(Views(records, 0, 6)),
                      Catch::Contains("record 4 of the batch") && Catch::Contains("'label' is missing"));
  }
  SECTION("values of another kind") {
    tfexample::Example example;
    example.ParseFromString(records[1]);
    auto& ints = (*example.mutable_features()->mutable_feature())["ints"];
    ints.Clear();
    ints.mutable_float_list()->add_value(1);
    records[1] = example.SerializeAsString();
    CHECK_THROWS_WITH(parse_batch(Views(records, 0, 6)),
                      Catch::Contains("record 1 of the batch") && Catch::Contains("'ints' holds float32 values"));
  }
  SECTION("a FixedLen feature decoded to another shape") {
    tfexample::Example example;
    example.ParseFromString(records[5]);
    (*example.mutable_features()->mutable_feature())["image"].mutable_bytes_list()->set_value(0, "12345");
    records[5] = example.SerializeAsString();
    CHECK_THROWS_WITH(parse_batch(Views(records, 0, 6)),
                      Catch::Contains("record 5 of the batch") && Catch::Contains("'image' parses to Byte [5]") &&
                          Catch::Contains("[4] in record 0"));
    CHECK_THROWS_WITH(est::data::ParseExampleBatch(spec, "label", "input 'examples'")(Views(records, 0, 6)),
                      Catch::Contains("record 5 of input 'examples'"));
  }
  SECTION("bytes that are not an Example") {
    records[2] = std::string("\x0a\x7f", 2);
    CHECK_THROWS_AS(parse_batch(Views(records, 0, 6)), DataError);
    CHECK_THROWS_WITH(parse_batch(Views(records, 0, 6)), Catch::Contains("record 2 of the batch"));
  }
  SECTION("an empty batch and bad specs") {
    CHECK_THROWS_AS(parse_batch({}), DataError);
    CHECK_THROWS_AS(est::data::ParseExampleBatch(ExampleSpec{}), ConfigError);
    CHECK_THROWS_WITH(est::data::ParseExampleBatch(spec, "floats"), Catch::Contains("must be FixedLen"));
    ExampleSpec clash = spec;
    clash.emplace("ints_length", FeatureSpec::FixedLen(FeatureType::kInt64, {}));
    CHECK_THROWS_AS(est::data::ParseExampleBatch(clash), ConfigError);
  }
}

TEST_CASE("Dataset::parse_batches equals parsing each record and padded_batch", "[data][example]") {
  const ExampleSpec spec = EveryKindSpec();
  const std::vector<std::string> records = RandomRecords(23, 3);
  const std::string file = WriteRecords("parse_batches", records);
  const auto raw = est::data::TFRecordDataset({file});
  const auto parsed = est::data::TFRecordDataset(
      {file}, est::data::TFRecordDatasetOptions().parser(est::data::ParseExample(spec, "label")));
  const auto parse_batch = est::data::ParseExampleBatch(spec, "label");
  for (int64_t calls : {int64_t{1}, int64_t{3}}) {
    for (bool drop : {false, true}) {
      INFO("num_parallel_calls " << calls << ", drop_remainder " << drop);
      const auto batches =
          raw.parse_batches(5, parse_batch, est::data::ParseBatchesOptions().drop_remainder(drop).num_parallel_calls(calls));
      const auto expected = parsed.padded_batch(5, drop);
      CHECK(batches.cardinality() == expected.cardinality());
      auto actual_it = batches.make_iterator();
      auto expected_it = expected.make_iterator();
      int64_t count = 0;
      while (auto want = expected_it->next()) {
        auto got = actual_it->next();
        REQUIRE(got.has_value());
        CheckSameElement(*got, *want);
        ++count;
      }
      CHECK_FALSE(actual_it->next().has_value());
      CHECK(count == (drop ? 4 : 5));
    }
  }
  SECTION("skip moves by whole groups") {
    auto it = raw.parse_batches(5, parse_batch).make_iterator();
    CHECK(it->skip(2) == 2);
    CheckSameElement(*it->next(), PerRecord(spec, "label", Views(records, 10, 15)));
    CHECK(it->skip(5) == 2);  // the group of records 15..19 and the last, partial one
    CHECK_FALSE(it->next().has_value());
  }
  SECTION("records shuffled before it") {
    const auto shuffled = raw.shuffle(23, 11).parse_batches(23, parse_batch);
    const Element batch = *shuffled.make_iterator()->next();
    CHECK(batch.labels.size(0) == 23);
    CHECK(batch.features.at("dense").select(1, 1).sum().item<float>() == Approx(-(22.0 * 23 / 2)));
  }
  SECTION("errors") {
    CHECK_THROWS_AS(raw.parse_batches(0, parse_batch), DataError);
    CHECK_THROWS_AS(raw.parse_batches(5, nullptr), DataError);
    CHECK_THROWS_WITH(parsed.parse_batches(5, parse_batch).make_iterator()->next(),
                      Catch::Contains("one feature 'record'"));
  }
}
