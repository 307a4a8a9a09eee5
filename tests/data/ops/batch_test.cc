#include "common/error.h"
#include "data/dataset.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace batch_test {
using est::DataError;
using est::data::Dataset;
using est::data::Element;
using est::testing::Drain;
using est::testing::Range;
using est::testing::Values;

using Ints = std::vector<int64_t>;

namespace {

/// The "x" values of each batch.
std::vector<Ints> BatchedXs(const Dataset& dataset) {
  std::vector<Ints> batches;
  for (const auto& batch : Drain(dataset)) batches.push_back(Values(batch.features.at("x")));
  return batches;
}

}  // namespace

TEST_CASE("Dataset::batch stacks elements", "[data]") {
  SECTION("batch stacks consecutive elements and keeps the partial last batch") {
    CHECK(BatchedXs(Range(7).batch(3)) == std::vector<Ints>{{0, 1, 2}, {3, 4, 5}, {6}});
    CHECK(BatchedXs(Range(6).batch(3)) == std::vector<Ints>{{0, 1, 2}, {3, 4, 5}});
    CHECK(BatchedXs(Range(2).batch(5)) == std::vector<Ints>{{0, 1}});
    CHECK(BatchedXs(Range(0).batch(5)).empty());
  }

  SECTION("batch with drop_remainder drops the partial last batch") {
    CHECK(BatchedXs(Range(7).batch(3, true)) == std::vector<Ints>{{0, 1, 2}, {3, 4, 5}});
    CHECK(BatchedXs(Range(2).batch(5, true)).empty());
  }

  SECTION("batch stacks every feature and the labels") {
    at::Tensor images = at::arange(24, at::kFloat).reshape({4, 2, 3});
    auto batches =
        Drain(Dataset::FromTensors({{"image", images}}, at::tensor({5, 6, 7, 8})).batch(3));
    REQUIRE(batches.size() == 2);
    CHECK(batches[0].features.at("image").sizes() == at::IntArrayRef{3, 2, 3});
    CHECK(at::equal(batches[0].features.at("image"), images.slice(0, 0, 3)));
    CHECK(at::equal(batches[1].features.at("image"), images.slice(0, 3, 4)));
    CHECK(Values(batches[0].labels.to(at::kLong)) == Ints{5, 6, 7});
    CHECK(batches[1].labels.sizes() == at::IntArrayRef{1});
  }

  SECTION("batch of unlabeled elements has undefined labels") {
    auto batches = Drain(Range(4).batch(2));
    REQUIRE(batches.size() == 2);
    CHECK_FALSE(batches[0].labels.defined());
  }

  SECTION("batch of batches adds another dimension") {
    auto batches = Drain(Range(8).batch(2).batch(2));
    REQUIRE(batches.size() == 2);
    CHECK(batches[1].features.at("x").sizes() == at::IntArrayRef{2, 2});
    CHECK(Values(batches[1].features.at("x").flatten()) == Ints{4, 5, 6, 7});
  }
}

TEST_CASE("Dataset::batch errors", "[data]") {
  SECTION("batch rejects elements of different shapes, naming the key and both shapes") {
    Dataset ragged = Range(3).map([](Element e) {
      e.features["v"] = at::zeros({e.features["x"].item<int64_t>() + 1});
      return e;
    });
    CHECK_THROWS_AS(Drain(ragged.batch(2)), DataError);
    CHECK_THROWS_WITH(Drain(ragged.batch(2)),
                      Catch::Contains("'v'") && Catch::Contains("[1]") && Catch::Contains("[2]"));
  }

  SECTION("batch rejects elements of different dtypes or keys") {
    Dataset mixed_dtype = Range(2).map([](Element e) {
      if (e.features["x"].item<int64_t>() == 1) e.features["x"] = e.features["x"].to(at::kFloat);
      return e;
    });
    CHECK_THROWS_WITH(Drain(mixed_dtype.batch(2)), Catch::Contains("'x'") &&
                                                       Catch::Contains("Long") &&
                                                       Catch::Contains("Float"));
    Dataset mixed_keys = Range(2).map([](Element e) {
      if (e.features["x"].item<int64_t>() == 1) e.features["y"] = e.features["x"];
      return e;
    });
    CHECK_THROWS_WITH(Drain(mixed_keys.batch(2)), Catch::Contains("'y'"));
  }

  SECTION("batch rejects a mix of labeled and unlabeled elements") {
    Dataset mixed = Range(2, /*labeled=*/true).map([](Element e) {
      if (e.features["x"].item<int64_t>() == 1) e.labels = at::Tensor();
      return e;
    });
    CHECK_THROWS_WITH(Drain(mixed.batch(2)), Catch::Contains("labels"));
  }

  SECTION("batch's error messages, word for word") {
    Dataset ragged = Range(2).map([](Element e) {
      e.features["v"] = at::zeros({e.features["x"].item<int64_t>() + 1});
      return e;
    });
    CHECK_THROWS_WITH(Drain(ragged.batch(2)),
                      "Dataset::batch: feature 'v' has shape [1] in element 0 of the batch but "
                      "shape [2] in element 1; batch needs equal shapes (padded_batch pads them)");
    Dataset mixed_dtype = Range(2).map([](Element e) {
      if (e.features["x"].item<int64_t>() == 1) e.features["x"] = e.features["x"].to(at::kFloat);
      return e;
    });
    CHECK_THROWS_WITH(Drain(mixed_dtype.batch(2)),
                      "Dataset::batch: feature 'x' has dtype Long in element 0 of the batch but "
                      "dtype Float in element 1; batch needs equal dtypes");
    Dataset mixed_keys = Range(2).map([](Element e) {
      if (e.features["x"].item<int64_t>() == 1) e.features["y"] = e.features["x"];
      return e;
    });
    CHECK_THROWS_WITH(Drain(mixed_keys.batch(2)),
                      "Dataset::batch: element 0 of the batch has features {'x'} but element 1 "
                      "has {'x', 'y'}");
    Dataset mixed_labels = Range(2, /*labeled=*/true).map([](Element e) {
      if (e.features["x"].item<int64_t>() == 1) e.labels = at::Tensor();
      return e;
    });
    CHECK_THROWS_WITH(Drain(mixed_labels.batch(2)),
                      "Dataset::batch: element 0 of the batch has labels but element 1 has none");
  }

  SECTION("batch rejects a batch_size below 1") {
    CHECK_THROWS_WITH(Range(1).batch(0), Catch::Contains("batch_size is 0"));
  }
}

}  // namespace batch_test
