#include "data/dataset.h"

#include "common/error.h"
#include "common/memory_limit.h"

#include "tests/data/test_datasets.h"
#include "tests/test_util.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::Dataset;
using est::data::Element;
using est::testing::Range;
using est::testing::Xs;

using Ints = std::vector<int64_t>;

TEST_CASE("Dataset iterators", "[data]") {
  SECTION("each make_iterator starts from the first element") {
    Dataset dataset = Range(3);
    auto first = dataset.make_iterator();
    first->next();
    CHECK(Xs(*dataset.make_iterator()) == Ints{0, 1, 2});
    CHECK(Xs(*first) == Ints{1, 2});
  }

  SECTION("an iterator outlives the Dataset it came from") {
    auto iterator = Range(4).map([](Element e) { return e; }).batch(2).make_iterator();
    CHECK(est::testing::Values(iterator->next()->features.at("x")) == Ints{0, 1});
    CHECK(est::testing::Values(iterator->next()->features.at("x")) == Ints{2, 3});
    CHECK_FALSE(iterator->next().has_value());
    CHECK_FALSE(iterator->next().has_value());
  }

  SECTION("transformations leave the original Dataset unchanged") {
    Dataset original = Range(5);
    Dataset taken = original.take(2);
    CHECK(Xs(original) == Ints{0, 1, 2, 3, 4});
    CHECK(Xs(taken) == Ints{0, 1});
  }
}

TEST_CASE("a rebuilt seeded pipeline reproduces its sequence", "[data]") {
  SECTION("a rebuilt seeded pipeline reproduces its sequence") {
    auto build = [] {
      return Range(50)
          .shuffle(16, 7)
          .map([](Element e) {
            e.features["x"] = e.features["x"] * 2;
            return e;
          })
          .repeat(3)
          .batch(4)
          .prefetch(2);
    };
    std::vector<Ints> first_run, second_run;
    for (auto* run : {&first_run, &second_run}) {
      auto iterator = build().make_iterator();
      while (auto batch = iterator->next())
        run->push_back(est::testing::Values(batch->features.at("x")));
    }
    CHECK(first_run.size() == 38);  // 150 elements in batches of 4
    CHECK(first_run == second_run);
    // Restoring a position: a fresh pipeline advanced N steps continues identically.
    auto resumed = build().make_iterator();
    for (int i = 0; i < 10; ++i) resumed->next();
    CHECK(est::testing::Values(resumed->next()->features.at("x")) == first_run[10]);
  }
}

TEST_CASE("batch fails at its first element, naming the sizes, when the batch could not fit in memory", "[data]") {
  // Elements of 64 floats, repeated without end: a batch of 10^15 would otherwise grow
  // until the OOM killer came.
  Dataset kilobytes = Dataset::FromTensors({{"x", at::zeros({4, 64}, at::kFloat)}})
                          .map([](Element element) { return element; })
                          .repeat();
  auto iterator = kilobytes.batch(1000000000000000).make_iterator();
  CHECK_THROWS_MATCHES(
      iterator->next(), est::DataError,
      est::testing::MessageMatches(
          Catch::StartsWith("Dataset::batch: a batch of 1000000000000000 elements of 256 bytes each needs about "
                            "795.8 PiB (the elements, their tensors and their stacked copy), more than the ") &&
          Catch::EndsWith(" this process may use (the machine's memory, or its cgroup's limit); use a smaller "
                          "batch_size")));
  // A batch that fits is unaffected.
  auto fits = kilobytes.batch(1000).make_iterator();
  CHECK(fits->next()->features.at("x").sizes() == at::IntArrayRef({1000, 64}));
  // Scalar elements (est-train's linear model): their values and stacked copy alone would just
  // fit, but each gathered tensor costs far more than its 4 bytes.
  const auto just_fits = static_cast<int64_t>(est::MemoryLimitBytes() / 16);
  Dataset scalars = Dataset::FromTensors({{"x", at::ones({4})}}, at::ones({4}))
                        .map([](Element element) { return element; })
                        .repeat();
  CHECK_THROWS_MATCHES(scalars.batch(just_fits).make_iterator()->next(), est::DataError,
                       est::testing::MessageMatches(Catch::Contains(
                           "elements of 8 bytes each needs about")));
}
