// categorical_column_with_hash_bucket's ids against TensorFlow 2.15's, for string and
// integer inputs, sparse and dense, and bucket counts 1, 7, 1000 and 2^20.

#include "estimator/feature_columns/hash_bucket.h"

#include "common/error.h"
#include "tests/estimator/feature_columns/tensorflow_ids.h"
#include "tests/test_util.h"

using namespace est::feature_columns;
using est::testing::MessageMatches;
using namespace est::feature_columns::tensorflow_ids;

TEST_CASE("HashBucket gives TensorFlow's ids for every tabulated input and size", "[feature_columns]") {
  for (const HashBucketCase& expected : kHashBucketCases) {
    INFO(expected.input << " into " << expected.hash_bucket_size << " buckets");
    const HashBucket column(expected.input, expected.hash_bucket_size);
    const CategoricalIds ids =
        IsStringInput(expected.input) ? column.ids(StringBatch(expected.input)) : column.ids(IntBatch(expected.input));
    CHECK(IdsToRows(ids) == expected.ids);
  }
  CHECK(std::size(kHashBucketCases) == 16);
}

TEST_CASE("HashBucket hashes an integer as TensorFlow's as_string writes it", "[feature_columns]") {
  CHECK(IntegerAsString(0) == "0");
  CHECK(IntegerAsString(-42) == "-42");
  CHECK(IntegerAsString(INT64_MIN) == "-9223372036854775808");
  const HashBucket column("n", 1000);
  CHECK(column.id(int64_t{-42}) == column.id("-42"));
  CHECK(StringToHashBucketFast("hello", 1000) == column.id("hello"));
}

TEST_CASE("HashBucket refuses a size below 1, naming the column", "[feature_columns]") {
  CHECK_THROWS_MATCHES(HashBucket("city", 0), est::ConfigError, MessageMatches(Catch::Matchers::Contains("'city'")));
}

TEST_CASE("HashBucket keeps the padded layout of its integer input", "[feature_columns]") {
  const CategoricalIds values = IdsFromRows({{}, {5, 6}});
  const CategoricalIds ids = HashBucket("n", 10).ids(values);
  CHECK(ids.ids.sizes() == values.ids.sizes());
  CHECK(ids.lengths.equal(values.lengths));
}
