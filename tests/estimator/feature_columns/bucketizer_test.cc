// bucketized_column's ids (with each element's offset) and plain buckets against
// TensorFlow 2.15's: values below, on and above boundaries, NaN and infinities, float64 and
// int64 sources (cast to float32 as TensorFlow's numeric column does), shapes [1] and [3].

#include "estimator/feature_columns/bucketizer.h"

#include "common/error.h"
#include "tests/estimator/feature_columns/tensorflow_ids.h"
#include "tests/test_util.h"

using namespace est::feature_columns;
using est::testing::MessageMatches;
using namespace est::feature_columns::tensorflow_ids;

TEST_CASE("Bucketizer gives TensorFlow's ids and buckets for every tabulated input", "[feature_columns]") {
  for (const BucketizedCase& expected : kBucketizedCases) {
    INFO(expected.input << " with " << expected.boundaries.size() << " boundaries");
    const Bucketizer column(expected.input, expected.boundaries);
    const at::Tensor values = NumericBatch(expected.input);
    CHECK(IdsToRows(column.ids(values)) == expected.ids);
    const at::Tensor plain = column.buckets(values);
    CHECK(IdsToRows(CategoricalIds{plain, at::full({plain.size(0)}, plain.size(1), at::kLong), {}}) ==
          expected.buckets);
  }
}

TEST_CASE("Bucketizer counts the ids of a multi-dimensional column", "[feature_columns]") {
  const Bucketizer column("price", {0.0, 1.0, 10.0});
  CHECK(column.name() == "price_bucketized");
  CHECK(column.buckets_per_element() == 4);
  CHECK(column.num_buckets(3) == 12);
  const CategoricalIds ids = column.ids(at::tensor({0.5f, 2.0f}, at::kFloat));  // [batch]: one element each
  CHECK(IdsToRows(ids) == IntRows{{1}, {2}});
}

TEST_CASE("Bucketizer refuses empty or unsorted boundaries and other ranks", "[feature_columns]") {
  CHECK_THROWS_AS(Bucketizer("price", {}), est::ConfigError);
  CHECK_THROWS_MATCHES(Bucketizer("price", {0.0, 0.0}), est::ConfigError,
                       MessageMatches(Catch::Matchers::Contains("'price_bucketized'")));
  CHECK_THROWS_AS(Bucketizer("price", {1.0}).ids(at::zeros({2, 2, 2})), est::DataError);
}
