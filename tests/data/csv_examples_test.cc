// CsvExamples: CSV rows read through an ExampleSpec give the elements ParseExample gives of the
// same values as tf.train.Example records, padded_batch included; bad specs, options and fields
// are named.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "data/csv_examples.h"
#include "data/example.h"
#include "data/example/example.pb.h"
#include "tests/data/csv_files.h"
#include "tests/data/test_datasets.h"
#include "tests/test_util.h"

namespace csv_examples_test {
using namespace est;
using data::FeatureSpec;
using data::FeatureType;

namespace {

// "city" strings to two ids each (length, first byte); "tags" int64s, "weight" floats (VarLen);
// "age" a float with a default; "label" one of "no", "yes".
data::ExampleSpec Spec() {
  const data::BytesToIds two = [](std::string_view value, int64_t* ids) {
    ids[0] = static_cast<int64_t>(value.size());
    ids[1] = value[0];
  };
  const data::BytesToIds yes_no = [](std::string_view value, int64_t* id) {
    EST_CHECK(value == "no" || value == "yes", DataError, "not a label: ", value);
    *id = value == "yes" ? 1 : 0;
  };
  return {{"city", FeatureSpec::VarLen(FeatureType::kBytes).ids_decoder(two, 2)},
          {"tags", FeatureSpec::VarLen(FeatureType::kInt64)},
          {"weight", FeatureSpec::VarLen(FeatureType::kFloat32)},
          {"age", FeatureSpec::FixedLen(FeatureType::kFloat32, {1}).default_value(at::full({1}, 40.0F))},
          {"label", FeatureSpec::FixedLen(FeatureType::kBytes, {1}).ids_decoder(yes_no)}};
}

// A record of the same values; an empty text or a missing number is left out.
std::string Record(const std::string& city, const std::string& tags, const std::string& weight,
                   const std::string& age, const std::string& label) {
  tfexample::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  features["city"].mutable_bytes_list();
  if (!city.empty()) features["city"].mutable_bytes_list()->add_value(city);
  features["tags"].mutable_int64_list();
  if (!tags.empty()) features["tags"].mutable_int64_list()->add_value(std::stoll(tags));
  features["weight"].mutable_float_list();
  if (!weight.empty()) features["weight"].mutable_float_list()->add_value(std::stof(weight));
  if (!age.empty()) features["age"].mutable_float_list()->add_value(std::stof(age));
  features["label"].mutable_bytes_list()->add_value(label);
  return example.SerializeAsString();
}

}  // namespace

TEST_CASE("CsvExamples reads rows as ParseExample reads records of the same values", "[data][csv]") {
  const std::vector<std::vector<std::string>> rows{{"paris", "3", "0.5", "31.5", "yes"},
                                                   {"", "", "", "", "no"},
                                                   {"rome", "-7", "2", "", "yes"},
                                                   {"oslo", "12", "", "22", "no"}};
  std::string text = "id,age,city,extra,label,tags,weight\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    text += std::to_string(i) + "," + r[3] + "," + r[0] + ",unused," + r[4] + "," + r[1] + "," + r[2] + "\n";
  }
  const std::string file = testing::WriteCsv(testing::FreshTempDir("csv_examples") / "rows.csv", text);
  const data::RecordParser parse = data::ParseExample(Spec(), "label");
  std::vector<data::Element> expected;
  for (const auto& r : rows) expected.push_back(parse(Record(r[0], r[1], r[2], r[3], r[4])));

  size_t i = 0;
  for (const data::Element& element : testing::Drain(data::CsvExamples({file}, Spec(), "label"))) {
    INFO("row " << i);
    REQUIRE(i < expected.size());
    CHECK(element.features.size() == expected[i].features.size());
    for (const auto& [key, tensor] : expected[i].features) {
      INFO(key);
      CHECK(element.features.at(key).scalar_type() == tensor.scalar_type());
      CHECK(element.features.at(key).sizes() == tensor.sizes());
      CHECK(at::equal(element.features.at(key), tensor));
    }
    CHECK(at::equal(element.labels, expected[i].labels));
    ++i;
  }
  CHECK(i == rows.size());

  // Batched as records are: the VarLen features padded, their lengths beside them.
  const data::Element batch = testing::Drain(data::CsvExamples({file}, Spec(), "label").padded_batch(4)).at(0);
  CHECK(at::equal(batch.features.at("city_length"), at::tensor({1, 0, 1, 1}, at::kLong)));
  CHECK(batch.features.at("city").sizes() == at::IntArrayRef({4, 1, 2}));
  CHECK(at::equal(batch.features.at("age"), at::tensor({31.5F, 40.0F, 40.0F, 22.0F}).view({4, 1})));
  CHECK(at::equal(batch.labels, at::tensor({1, 0, 1, 0}, at::kLong).view({4, 1})));

  // Files without a header name their columns.
  std::string headless = text.substr(text.find('\n') + 1);
  const std::string no_header = testing::WriteCsv(testing::FreshTempDir("csv_examples_headless") / "rows.csv", headless);
  const data::Element first =
      testing::Drain(data::CsvExamples({no_header}, Spec(), "label",
                                       data::CsvExamplesOptions().header(false).column_names(
                                           {"id", "age", "city", "extra", "label", "tags", "weight"})))
          .at(0);
  CHECK(at::equal(first.features.at("tags"), expected[0].features.at("tags")));
}

TEST_CASE("CsvExamples names what does not fit", "[data][csv]") {
  const std::string file =
      testing::WriteCsv(testing::FreshTempDir("csv_examples_bad") / "rows.csv", "age,label\nx,yes\n,maybe\n");
  const data::ExampleSpec spec{
      {"age", FeatureSpec::FixedLen(FeatureType::kFloat32, {1})},
      {"label", FeatureSpec::FixedLen(FeatureType::kBytes, {1}).ids_decoder([](std::string_view value, int64_t* id) {
         EST_CHECK(value == "yes", DataError, "not a label: ", value);
         *id = 1;
       })}};
  auto first_error = [&](const data::ExampleSpec& of) {
    return testing::ErrorMessageOf<DataError>([&] {
      testing::Drain(data::CsvExamples({file}, of, "label"));
    });
  };
  CHECK_THAT(first_error(spec), Catch::Contains("rows.csv") && Catch::Contains("line 2") &&
                                    Catch::Contains("'age'") && Catch::Contains("float32"));
  data::ExampleSpec defaulted = spec;
  defaulted.at("age").default_value(at::zeros({1}));
  CHECK_THAT(first_error(defaulted), Catch::Contains("line 2") && Catch::Contains("'age'"));
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] {
               data::CsvExamples({file}, {{"v", FeatureSpec::FixedLen(FeatureType::kFloat32, {2})}});
             }),
             Catch::Contains("feature 'v' is FixedLen of shape [2]; a CSV field holds one value"));
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] { data::CsvExamples({file}, spec, "missing"); }),
             Catch::Contains("the label 'missing' is not a feature of the spec"));
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] {
               data::CsvExamples({file}, spec, "label", data::CsvExamplesOptions().header(false));
             }),
             Catch::Contains("files without a header need column_names"));
}

}  // namespace csv_examples_test
