// crossed_column's ids against TensorFlow 2.15's: crosses of two and three inputs mixing raw
// strings and integers, vocabulary and bucketized columns, in either order, with empty rows,
// a custom hash_key, one bucket, and dense raw features (crossed after the sparse ones).

#include "estimator/feature_columns/crosser.h"

#include "common/error.h"
#include "estimator/feature_columns/bucketizer.h"
#include "estimator/feature_columns/fingerprint.h"
#include "estimator/feature_columns/vocabulary.h"
#include "tests/estimator/feature_columns/tensorflow_ids.h"
#include "tests/test_util.h"

using namespace est::feature_columns;
using est::testing::MessageMatches;
using namespace est::feature_columns::tensorflow_ids;

namespace {

// What make_tensorflow_ids.py's part() builds, as a cross input.
CrossInput CrossPartInput(const CrossPart& part) {
  const std::string kind = part.kind;
  const std::string input = part.input;
  if (kind == "string") return CrossInput::Strings(StringBatch(input, /*drop_ignored=*/false), IsDenseInput(input));
  if (kind == "int") return CrossInput::Ids(IntBatch(input, /*drop_ignored=*/false), IsDenseInput(input));
  if (kind == "bucketized") return CrossInput::Ids(Bucketizer(input, {0.0, 1.0, 10.0}).ids(NumericBatch(input)));
  REQUIRE(kind == "vocabulary");
  if (IsStringInput(input)) {
    const std::vector<std::string> words = {"a", "x", "\346\227\245\346\234\254\350\252\236"};  // CROSS_VOCABULARY
    return CrossInput::Ids(Vocabulary::FromList(input, words, part.parameter).ids(StringBatch(input)));
  }
  const std::vector<int64_t> numbers = {1, 5, 0};  // CROSS_INT_VOCABULARY
  return CrossInput::Ids(Vocabulary::FromList(input, numbers, part.parameter).ids(IntBatch(input)));
}

}  // namespace

TEST_CASE("Crosser gives TensorFlow's ids for every tabulated cross", "[feature_columns]") {
  for (const CrossCase& expected : kCrossCases) {
    std::vector<CrossInput> inputs;
    std::string name;
    for (const CrossPart& part : expected.parts) {
      inputs.push_back(CrossPartInput(part));
      name += std::string(name.empty() ? "" : "_X_") + part.kind + ":" + part.input;
    }
    INFO(name << " into " << expected.hash_bucket_size << " buckets, hash_key " << expected.hash_key);
    const Crosser column(name, expected.hash_bucket_size, expected.hash_key);
    CHECK(IdsToRows(column.ids(inputs)) == expected.ids);
  }
  CHECK(std::size(kCrossCases) == 8);
}

TEST_CASE("Crosser hashes one combination from the hash key, input by input", "[feature_columns]") {
  const Crosser column("a_X_b", 1000);
  const auto a = static_cast<int64_t>(Fingerprint64("a"));
  CHECK(column.id({a, 3}) ==
        static_cast<int64_t>(FingerprintCat64(FingerprintCat64(kDefaultCrossHashKey, static_cast<uint64_t>(a)), 3) %
                             1000));
  CHECK(Crosser("a_X_b", 1000, 0).id({a, 3}) == column.id({a, 3}));  // 0 means the default key
}

TEST_CASE("Crosser refuses fewer than two inputs, weights, unequal batches and a size below 1", "[feature_columns]") {
  CHECK_THROWS_AS(Crosser("c", 0), est::ConfigError);
  const Crosser column("c", 10);
  CHECK_THROWS_AS(column.ids({CrossInput::Ids(IdsFromRows({{1}}))}), est::ConfigError);
  CategoricalIds weighted = IdsFromRows({{1}});
  weighted.weights = at::ones({1, 1});
  CHECK_THROWS_AS(column.ids({CrossInput::Ids(weighted), CrossInput::Ids(IdsFromRows({{2}}))}), est::ConfigError);
  CHECK_THROWS_MATCHES(column.ids({CrossInput::Ids(IdsFromRows({{1}})), CrossInput::Ids(IdsFromRows({{1}, {2}}))}),
                       est::DataError, MessageMatches(Catch::Matchers::Contains("'c'")));
}
