// categorical_column_with_identity's ids against TensorFlow 2.15's, with and without a
// default value, and its refusals.

#include "estimator/feature_columns/identity.h"

#include "common/error.h"
#include "tests/estimator/feature_columns/tensorflow_ids.h"
#include "tests/test_util.h"

using namespace est::feature_columns;
using est::testing::MessageMatches;
using namespace est::feature_columns::tensorflow_ids;

TEST_CASE("Identity gives TensorFlow's ids for every tabulated input", "[feature_columns]") {
  for (const IdentityCase& expected : kIdentityCases) {
    INFO(expected.input << " with " << expected.num_buckets << " buckets, default " << expected.default_value);
    const Identity column(expected.input, expected.num_buckets,
                          expected.default_value < 0 ? std::nullopt : std::optional<int64_t>(expected.default_value));
    CHECK(IdsToRows(column.ids(IntBatch(expected.input))) == expected.ids);
  }
}

TEST_CASE("Identity without a default refuses an out-of-range value, naming it", "[feature_columns]") {
  const Identity column("item", 5);
  CHECK(column.id(4) == 4);
  CHECK_THROWS_MATCHES(column.id(5), est::DataError, MessageMatches(Catch::Matchers::Contains("'item'") &&
                                                          Catch::Matchers::Contains("value 5 is not in [0, 5)")));
  CHECK_THROWS_AS(column.ids(IdsFromRows({{1, -1}})), est::DataError);
}

TEST_CASE("Identity refuses the configurations TensorFlow refuses", "[feature_columns]") {
  CHECK_THROWS_AS(Identity("item", 0), est::ConfigError);
  CHECK_THROWS_AS(Identity("item", 5, 5), est::ConfigError);
  CHECK_THROWS_AS(Identity("item", 5, -1), est::ConfigError);
}
