// Dataset::padded_batch: tensors of one key padded with zeros to the largest in the batch.

#include <torch/torch.h>

#include <functional>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::DataError;
using est::data::Dataset;
using est::data::Element;
using est::testing::Drain;

namespace {

/// Elements make(0), ..., make(n - 1).
Dataset Generated(int64_t n, std::function<Element(int64_t)> make) {
  return Dataset::FromGenerator([n, make] {
    struct Generator : est::data::Iterator {
      int64_t n, i = 0;
      std::function<Element(int64_t)> make;
      Generator(int64_t n, std::function<Element(int64_t)> make) : n(n), make(std::move(make)) {}
      std::optional<Element> next() override {
        if (i == n) return std::nullopt;
        return make(i++);
      }
    };
    return std::make_unique<Generator>(n, make);
  });
}

/// Element i has "v" = [1, 2, ..., i + 1] (int64) and "m" = float ones [i + 1, 2].
Dataset Growing(int64_t n) {
  return Generated(n, [](int64_t i) {
    Element element;
    element.features["v"] = torch::arange(1, i + 2, torch::kLong);
    element.features["m"] = torch::ones({i + 1, 2});
    element.labels = torch::tensor(i);
    return element;
  });
}

}  // namespace

TEST_CASE("Dataset::padded_batch pads every tensor of a batch to the largest", "[data]") {
  const auto batches = Drain(Growing(5).padded_batch(2));
  REQUIRE(batches.size() == 3);
  CHECK(torch::equal(batches[0].features.at("v"), torch::tensor({1, 0, 1, 2}, torch::kLong).view({2, 2})));
  CHECK(torch::equal(batches[1].features.at("v"), torch::tensor({1, 2, 3, 0, 1, 2, 3, 4}, torch::kLong).view({2, 4})));
  CHECK(torch::equal(batches[2].features.at("v"), torch::tensor({{1, 2, 3, 4, 5}}, torch::kLong)));
  const auto m = batches[1].features.at("m");
  CHECK(m.sizes() == torch::IntArrayRef({2, 4, 2}));
  CHECK(m.sum().item<float>() == 14);  // 3×2 ones and 4×2 ones
  CHECK(torch::equal(m[0][3], torch::zeros({2})));
  CHECK(torch::equal(batches[1].labels, torch::tensor({2, 3})));
  CHECK(Drain(Growing(5).padded_batch(2, /*drop_remainder=*/true)).size() == 2);
}

TEST_CASE("Dataset::padded_batch pads inner dimensions and strided tensors too", "[data]") {
  // "w" grows in its last dimension; "t" is a transposed (strided) view growing in its first.
  auto elements = Generated(2, [](int64_t i) {
    Element element;
    element.features["w"] = torch::arange(1, 2 * (i + 1) + 1, torch::kLong).view({2, i + 1});
    element.features["t"] = torch::arange(1, 2 * (i + 1) + 1, torch::kLong).view({2, i + 1}).t();
    return element;
  });
  const Element batch = Drain(elements.padded_batch(2)).at(0);
  CHECK(torch::equal(batch.features.at("w"), torch::tensor({1, 0, 2, 0, 1, 2, 3, 4}, torch::kLong).view({2, 2, 2})));
  CHECK(torch::equal(batch.features.at("t"), torch::tensor({1, 2, 0, 0, 1, 3, 2, 4}, torch::kLong).view({2, 2, 2})));
}

TEST_CASE("Dataset::padded_batch refuses ranks that differ and a batch_size below 1", "[data]") {
  auto mixed = Generated(2, [](int64_t i) {
    Element element;
    element.features["x"] = i == 0 ? torch::zeros({3}) : torch::zeros({3, 1});
    return element;
  });
  CHECK_THROWS_WITH(Drain(mixed.padded_batch(2)),
                    Catch::Contains("feature 'x' has shape [3] in element 0") && Catch::Contains("equal ranks"));
  CHECK_THROWS_AS(Growing(3).padded_batch(0), DataError);
  CHECK_THROWS_WITH(Drain(Growing(3).batch(2)), Catch::Contains("padded_batch pads them"));
}
