// Categorical ids made while the input pipeline parses tf.train.Example records.

#include "estimator/feature_columns/example_decoders.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "data/example/example.pb.h"
#include "estimator/feature_columns/fingerprint.h"

#include <catch2/catch.hpp>

using namespace est::feature_columns;

namespace {

std::string RecordWithCities(std::initializer_list<std::string> cities) {
  est::tfexample::Example example;
  auto* list = (*example.mutable_features()->mutable_feature())["city"].mutable_bytes_list();
  for (const std::string& city : cities) list->add_value(city);
  return example.SerializeAsString();
}

}  // namespace

TEST_CASE("A VarLen bytes feature parses to hash-bucket ids with its length", "[feature_columns]") {
  const HashBucket column("city", 100);
  est::data::ExampleSpec spec;
  spec.emplace("city",
               est::data::FeatureSpec::VarLen(est::data::FeatureType::kBytes).decoder(HashBucketDecoder(column)));
  const est::data::Element element = est::data::ParseExample(spec)(RecordWithCities({"Paris", "Oslo", "Lima"}));
  const at::Tensor ids = element.features.at("city");
  CHECK(ids.scalar_type() == at::kLong);
  CHECK(ids.equal(at::tensor({column.id("Paris"), column.id("Oslo"), column.id("Lima")}, at::kLong)));
  CHECK(element.features.at("city_length").item<int64_t>() == 3);
}

TEST_CASE("A FixedLen bytes feature parses to vocabulary ids or fingerprints", "[feature_columns]") {
  auto vocabulary = std::make_shared<const Vocabulary>(
      Vocabulary::FromList("city", std::vector<std::string>{"Oslo", "Paris"}, /*num_oov_buckets=*/1));
  est::data::ExampleSpec spec;
  spec.emplace("city", est::data::FeatureSpec::FixedLen(est::data::FeatureType::kBytes, {2})
                           .decoder(VocabularyDecoder(vocabulary)));
  const std::string record = RecordWithCities({"Paris", "Rome"});
  CHECK(est::data::ParseExample(spec)(record).features.at("city").equal(at::tensor({1, 2}, at::kLong)));

  est::data::ExampleSpec fingerprints;
  fingerprints.emplace("city", est::data::FeatureSpec::FixedLen(est::data::FeatureType::kBytes, {2})
                                   .decoder(FingerprintDecoder()));
  const at::Tensor values = est::data::ParseExample(fingerprints)(record).features.at("city");
  CHECK(static_cast<uint64_t>(values[0].item<int64_t>()) == Fingerprint64("Paris"));
  CHECK(static_cast<uint64_t>(values[1].item<int64_t>()) == Fingerprint64("Rome"));
}

TEST_CASE("VocabularyDecoder refuses a vocabulary of integers", "[feature_columns]") {
  auto numbers = std::make_shared<const Vocabulary>(Vocabulary::FromList("n", std::vector<int64_t>{1, 2}));
  CHECK_THROWS_AS(VocabularyDecoder(numbers), est::ConfigError);
  CHECK_THROWS_AS(VocabularyDecoder(nullptr), est::ConfigError);
}
