// The padded layout of categorical ids: rows in and out, the layout checks, TensorFlow's
// dropping of missing values from dense inputs, and weights.

#include "estimator/feature_columns/categorical_ids.h"

#include "common/error.h"
#include "tests/estimator/feature_columns/tensorflow_ids.h"
#include "tests/test_util.h"

using namespace est::feature_columns;
using est::testing::MessageMatches;

TEST_CASE("IdsFromRows pads to the longest row and IdsToRows cuts each row back", "[feature_columns]") {
  const IntRows rows = {{1, 2, 3}, {}, {4}};
  const CategoricalIds ids = IdsFromRows(rows);
  CHECK(ids.ids.sizes() == at::IntArrayRef{3, 3});
  CHECK(ids.lengths.equal(at::tensor({3, 0, 1}, at::kLong)));
  CHECK(ids.ids[1].equal(at::zeros({3}, at::kLong)));
  CHECK(IdsToRows(ids) == rows);
  CHECK(IdsFromRows({{}, {}}).max_values() == 0);
}

TEST_CASE("CheckLayout names the column and what is wrong", "[feature_columns]") {
  CategoricalIds ids = IdsFromRows({{1, 2}, {3}});
  CHECK_NOTHROW(CheckLayout(ids, "city"));
  CategoricalIds too_long = ids;
  too_long.lengths = at::tensor({3, 1}, at::kLong);
  CHECK_THROWS_MATCHES(CheckLayout(too_long, "city"), est::DataError,
                       MessageMatches(Catch::Matchers::Contains("'city'") && Catch::Matchers::Contains("[0, 2]")));
  CategoricalIds floats = ids;
  floats.ids = floats.ids.to(at::kFloat);
  CHECK_THROWS_AS(CheckLayout(floats, "city"), est::DataError);
  CategoricalIds short_lengths = ids;
  short_lengths.lengths = at::tensor({1}, at::kLong);
  CHECK_THROWS_AS(CheckLayout(short_lengths, "city"), est::DataError);
}

TEST_CASE("DropIgnoredValues drops TensorFlow's missing-value markers from dense inputs", "[feature_columns]") {
  const at::Tensor dense = at::tensor({1, -1, -1, -1, 3, 4}, at::kInt).view({3, 2});
  CHECK(IdsToRows(DropIgnoredValues(dense, "n")) == IntRows{{1}, {}, {3, 4}});
  CHECK(IdsToRows(DropIgnoredValues(at::tensor({5, 0}, at::kLong), "n", 0)) == IntRows{{5}, {}});
  CHECK(DropIgnoredValues(StringRows{{"a", ""}, {"", ""}}) == StringRows{{"a"}, {}});
  CHECK_THROWS_AS(DropIgnoredValues(at::zeros({2}, at::kFloat), "n"), est::DataError);
}

TEST_CASE("WithWeights attaches float32 weights laid out as the ids", "[feature_columns]") {
  const CategoricalIds ids = IdsFromRows({{1, 2}, {3}});
  const at::Tensor weights = at::tensor({0.5, 2.0, 1.5, 0.0}, at::kDouble).view({2, 2});
  const CategoricalIds weighted = WithWeights(ids, weights, ids.lengths, "w");
  CHECK(weighted.weights.scalar_type() == at::kFloat);
  CHECK(weighted.weights.equal(weights.to(at::kFloat)));
  CHECK_THROWS_AS(WithWeights(ids, at::ones({2, 3}), ids.lengths, "w"), est::DataError);
  CHECK_THROWS_MATCHES(WithWeights(ids, weights, at::tensor({2, 2}, at::kLong), "w"), est::DataError,
                       MessageMatches(Catch::Matchers::Contains("as many weights as ids")));
}
